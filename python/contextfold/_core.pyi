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

Encoding = Literal["o200k_base", "cl100k_base", "o200k_harmony"]

def count(
    messages: Sequence[Any],
    /,
    *,
    model: str,
    tools: Sequence[Any] | None = None,
    response_format: Any | None = None,
) -> int:
    """Prompt tokens the OpenAI API bills for this chat.completions request, tokenized with the
    model's own encoding (offline; tiktoken-rs embeds the vocabularies).

    Messages: cookbook envelope (3 per message + role + content, +1 per name, +3 reply
    priming); tool calls as OpenAI renders them (ids not billed, results authored by
    ``functions.NAME``, parallel calls through ``multi_tool_use.parallel``); images by OpenAI's
    tile or patch formula from the header's pixel size. ``tools`` are rendered as OpenAI's
    TypeScript ``namespace functions`` block and a ``json_schema`` ``response_format`` as its
    ``# Response Formats`` section; both were derived from recorded usage (see README for the
    measured accuracy). Reasoning models (o3, o4, gpt-5) get their measured constants.
    Tokenizes with the GIL released. Raises ``UnknownModelError`` for a non-OpenAI model and
    ``InvalidMessageError`` (message index, field) on bad input; never mutates its arguments.
    """

def count_each(messages: Sequence[Any], /, *, model: str) -> list[int]:
    """Exact tokens of each message, envelope included, in order: ``count(messages, model=m)``
    equals ``sum(count_each(messages, model=m)) + 3`` (2 on reasoning models) without tools.
    Histories only grow, so callers can cache these per message."""

def count_text(text: str, /, *, model: str | None = None, encoding: Encoding | None = None) -> int:
    """Tokens of ``text`` in the model's (or the named) encoding. Special-token text such as
    ``"<|endoftext|>"`` is counted as ordinary text, as the API does for content. One of
    ``model`` / ``encoding`` is required; ``encoding`` wins when both are given."""

def encoding_for(model: str) -> Encoding:
    """The tiktoken encoding of an OpenAI model name (prefix match as tiktoken does; ``ft:`` and
    provider prefixes such as ``openai/`` are stripped). Raises ``UnknownModelError``."""

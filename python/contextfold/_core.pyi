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

def estimate_many(
    histories: Sequence[Sequence[Any]],
    /,
    *,
    provider: Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
    threads: int | None = None,
) -> list[int]:
    """``[estimate(h, ...) for h in histories]`` in one call: every history is read from the
    Python objects (with the GIL), then priced on ``threads`` threads (default: the CPU count)
    with the GIL released. Reading the objects dominates, so the speedup over one thread is
    modest; the gain is one boundary crossing and the GIL left free while pricing."""

class SessionLedger:
    """Per-session cache of message costs, usage anchor and correction: the Rust core of
    ``contextfold.Session`` (use that class; this one is its engine).

    Stores, per message of the last history seen, the object's identity, a cheap fingerprint
    and its cost, never the message. Calls are serialized by an internal mutex."""

    def __init__(
        self,
        *,
        provider: Provider = "openai",
        model: str | None = None,
        tools: Sequence[Any] | None = None,
        system: str | Sequence[Any] | None = None,
        track_wire: bool = False,
        smoothing: float = 0.5,
    ) -> None: ...
    def estimate(self, messages: Sequence[Any], /) -> int:
        """Prompt tokens of ``messages``: anchored on the last usage while its prefix is
        unchanged, else the calibrated heuristic; prices only messages not seen last call."""
    def measure(self, messages: Sequence[Any], /) -> tuple[int, int, int, int]:
        """``(tokens, heuristic, anchored_messages, wire_bytes)``; wire bytes are 0 unless
        ``track_wire``."""
    def record_usage(
        self, real: int, /, *, messages: Sequence[Any] | None = None, model: str | None = None
    ) -> tuple[int, int, int, int, int, float, bool]:
        """Record a real prompt count for the last estimated history (or ``messages``).
        Returns ``(messages, payload_chars, heuristic, estimate_before, real, correction,
        model_changed)``."""
    def invalidate(self, start: int = 0) -> None:
        """Forget cached costs of messages ``start..`` (in-place edits)."""
    def reset(self) -> None:
        """Forget cached costs, anchor, correction and last usage."""
    def set_model(self, model: str | None, /) -> None:
        """Switch model: new estimator; cached costs, anchor and correction dropped."""
    @property
    def correction(self) -> float: ...
    @property
    def last_usage(self) -> int | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def provider(self) -> str: ...
    @property
    def overhead(self) -> int: ...
    @property
    def cached_messages(self) -> int: ...
    @property
    def anchored_messages(self) -> int | None: ...
    @property
    def track_wire(self) -> bool: ...

"""Reading what the command line is given: a history, a provider request body, or JSONL of either.

A document is one JSON value: a list of messages (any wire format the library reads), or a
request body: OpenAI chat (``messages``), OpenAI Responses (``input``, ``instructions``),
Anthropic Messages (``messages`` with a top-level ``system`` or Anthropic content blocks) or
Gemini (``contents``, ``systemInstruction``), each with its ``tools`` and structured-output
schema (``response_format``, ``text``, ``output_format``, ``generationConfig``). The wire format is
detected; ``provider=`` forces it. JSONL is read line by line (files larger than memory work).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from contextfold._core import PROVIDERS, detect_wire_format
from contextfold.request import RequestBody
from contextfold.request import read_request as read_body


class InputError(ValueError):
    """A document that is not a history or a request body. ``field`` names where (``messages``)."""

    def __init__(self, message: str, *, field: str | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.index = index


@dataclass(frozen=True, slots=True)
class Request:
    """One history and what surrounds it, ready for `estimate` / `count` / `breakdown`.

    ``wire`` is the detected format (``history``, ``openai-chat``, ``openai-responses``,
    ``anthropic``, ``gemini``, ``bedrock``); ``recorded`` holds recorded model calls with their reported
    ``usage_prompt_tokens`` when the document carries them (the bundled example does).
    """

    messages: list[Any]
    provider: str
    model: str | None
    tools: list[Any] | None
    system: Any
    wire: str
    recorded: list[dict[str, Any]] = field(default_factory=list)
    #: The structured-output schema the body asks for (OpenAI ``response_format``, Responses
    #: ``text``, Anthropic ``output_format``, Gemini ``generationConfig``), as sent.
    response_format: Any = None
    #: The body as the core read it (its settings and what they cost); None for a history.
    body: RequestBody | None = None

    @property
    def settings_tokens(self) -> int:
        """What the body's settings (thinking, tool_choice, a provider's preamble) add to the
        prompt beyond the history, system and tools, as `estimate_request` prices them; 0 for a
        history."""
        return self.body.settings_tokens if self.body is not None else 0

    def options(self) -> dict[str, Any]:
        """Keyword arguments of `contextfold.estimate` / `breakdown` for this request."""
        return {"provider": self.provider, "model": self.model, "tools": self.tools, "system": self.system,
                "response_format": self.response_format}


def read_request(doc: Any, *, provider: str | None = None, model: str | None = None) -> Request:
    """Normalize one parsed JSON document into a `Request` (raises `InputError`).

    A list is a history; an object is a request body, read by the core's body readers (the one
    reader `contextfold.read_request` / `estimate_request` use)."""
    if provider is not None and provider not in PROVIDERS:
        raise InputError(f"unknown provider {provider!r}; valid: {', '.join(PROVIDERS)}", field="provider")
    if isinstance(doc, list):
        if provider is None:
            # The provider whose shape the messages have (the core's detection); OpenAI otherwise.
            fmt = detect_wire_format(doc)
            provider = fmt if fmt in ("gemini", "anthropic") else "openai"
        return Request(doc, provider, model, None, None, "history")
    if not isinstance(doc, dict):
        raise InputError(f"expected a list of messages or a request body (an object), got {type(doc).__name__}")
    recorded: list[dict[str, Any]] = doc["requests"] if isinstance(doc.get("requests"), list) else []
    # A recorded document may name the provider that served it (the bundled example does).
    named = doc.get("provider") if doc.get("provider") in PROVIDERS else None
    if model is not None:
        # The body is priced as sent to `model` (its settings too): read with the body's own
        # `model`, `estimate -m gpt-4o` of a Gemini body gave the Gemini price under gpt-4o's name.
        doc = {**doc, "modelId" if "modelId" in doc and "model" not in doc else "model": model}
    try:
        body = read_body(doc, provider=provider or named)
    except ValueError as e:
        raise InputError(str(e), field=getattr(e, "field", None) or None) from e
    return Request(body.messages, body.provider, model or body.model, body.tools, body.system, body.api, recorded,
                   body.response_format, body)


#: The largest document read (a JSON file, or one line of JSONL), in bytes: past it the input is
#: refused with a clean error instead of being read until memory runs out (``/dev/zero``, an
#: endless stdin). Override with the CLI's ``--max-bytes`` or ``CONTEXTFOLD_MAX_BYTES``.
MAX_DOCUMENT_BYTES = 512 << 20
MAX_BYTES_ENV = "CONTEXTFOLD_MAX_BYTES"
# Bytes read at once while skipping the rest of a line longer than the cap.
_SKIP_CHUNK = 1 << 20


def max_document_bytes(explicit: int | None = None) -> int:
    """The cap in force: ``explicit``, else ``$CONTEXTFOLD_MAX_BYTES``, else the default."""
    if explicit is not None:
        return explicit
    env = os.environ.get(MAX_BYTES_ENV)
    if env:
        try:
            value = int(env)
        except ValueError:
            raise InputError(f"{MAX_BYTES_ENV} must be a number of bytes, got {env!r}", field=MAX_BYTES_ENV) from None
        if value > 0:
            return value
        raise InputError(f"{MAX_BYTES_ENV} must be > 0, got {value}", field=MAX_BYTES_ENV)
    return MAX_DOCUMENT_BYTES


class DocumentTooLarge(InputError):
    """A document (or a JSONL line) larger than the cap; ``limit`` is the cap in bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"larger than the cap of {limit:,} bytes (raise it with --max-bytes or {MAX_BYTES_ENV})")
        self.limit = limit


class Lines:
    """A byte stream read with a cap: the first line is put back in front after detection;
    ``document()`` reads the whole (at most ``cap`` bytes), iteration yields each line, or None
    for a line longer than the cap (its bytes are skipped, never held)."""

    def __init__(self, head: bytes, rest: IO[bytes], cap: int) -> None:
        self._pending = head.splitlines(keepends=True)
        self._rest = rest
        self.cap = cap

    def _readline(self) -> bytes:
        if self._pending:
            line = self._pending.pop(0)
            if line.endswith(b"\n") or len(line) > self.cap or self._pending:
                return line
            return line + self._rest.readline(self.cap + 1 - len(line))
        return self._rest.readline(self.cap + 1)

    def document(self) -> bytes:
        """Everything (head included); DocumentTooLarge past the cap."""
        head = b"".join(self._pending)
        self._pending = []
        data = head + self._rest.read(max(0, self.cap + 1 - len(head)))
        if len(data) > self.cap:
            raise DocumentTooLarge(self.cap)
        return data

    def __iter__(self) -> Iterator[bytes | None]:
        while True:
            line = self._readline()
            if not line:
                return
            if len(line) > self.cap and not line.endswith(b"\n"):
                # Skip to the end of this line in fixed chunks: memory stays at one chunk.
                while True:
                    more = self._rest.readline(_SKIP_CHUNK)
                    if not more or more.endswith(b"\n"):
                        break
                yield None
                continue
            yield line

    def close(self) -> None:
        self._rest.close()


@dataclass(frozen=True, slots=True)
class Source:
    """An opened input: ``name`` for messages (the path, or ``<stdin>``), whether it is JSONL,
    its size in bytes when known (for progress), and the byte stream (capped)."""

    name: str
    jsonl: bool
    size: int | None
    stream: Lines


def open_source(path: str, *, jsonl: bool | None = None, max_bytes: int | None = None) -> Source:
    """Open ``path`` (``-`` for stdin) and tell JSON from JSONL: by extension (``.jsonl``,
    ``.ndjson``) or, otherwise, by whether the first line is a whole JSON value followed by more
    lines. Only the first line is read ahead (at most the cap); nothing else is loaded."""
    cap = max_document_bytes(max_bytes)
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
        name, size = "<stdin>", None
    else:
        p = Path(path)
        raw = p.open("rb")
        name, size = path, p.stat().st_size
    if jsonl is None and path != "-" and Path(path).suffix.lower() in (".jsonl", ".ndjson"):
        jsonl = True
    first = raw.readline(cap + 1)
    if jsonl is None:
        jsonl = False
        if first.strip() and len(first) <= cap:
            try:
                json.loads(first)
            except (ValueError, RecursionError):
                pass
            else:
                rest = raw.readline(cap + 1)
                jsonl = bool(rest.strip())
                first += rest
    return Source(name, jsonl, size, Lines(first, raw, cap))


def decode_json(data: bytes) -> Any:
    """One JSON document from bytes: invalid UTF-8 and nesting too deep for the parser are
    ValueErrors saying where, like invalid JSON."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"invalid UTF-8 at byte {e.start}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError("JSON nested too deeply to read") from None

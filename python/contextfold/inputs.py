"""Reading what the command line is given: a history, a provider request body, or JSONL of either.

A document is one JSON value: a list of messages (any wire format the library reads), or a
request body: OpenAI chat (``messages``), OpenAI Responses (``input``, ``instructions``),
Anthropic Messages (``messages`` with a top-level ``system`` or Anthropic content blocks) or
Gemini (``contents``, ``systemInstruction``), each with its ``tools`` and structured-output
schema (``response_format``, ``text``, ``output_format``, ``generationConfig``). The wire format is
detected; ``provider=`` forces it. JSONL is read line by line (files larger than memory work).
"""

from __future__ import annotations

import io
import json
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
    try:
        body = read_body(doc, provider=provider or named)
    except ValueError as e:
        raise InputError(str(e), field=getattr(e, "field", None) or None) from e
    return Request(body.messages, body.provider, model or body.model, body.tools, body.system, body.api, recorded,
                   body.response_format, body)


class _Prepend:
    """A text stream with already-read text put back in front (what `json.load` and line
    iteration need: ``read``, ``readline``, iteration, ``close``)."""

    def __init__(self, head: str, rest: IO[str]) -> None:
        self._lines = io.StringIO(head)
        self._rest = rest
        self._head_done = False

    def readline(self) -> str:
        if not self._head_done:
            line = self._lines.readline()
            if line:
                return line
            self._head_done = True
        return self._rest.readline()

    def read(self) -> str:
        head = "" if self._head_done else self._lines.read()
        self._head_done = True
        return head + self._rest.read()

    def __iter__(self) -> Iterator[str]:
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def close(self) -> None:
        self._rest.close()


@dataclass(frozen=True, slots=True)
class Source:
    """An opened input: ``name`` for messages (the path, or ``<stdin>``), whether it is JSONL,
    its size in bytes when known (for progress), and the text stream."""

    name: str
    jsonl: bool
    size: int | None
    stream: _Prepend


def open_source(path: str, *, jsonl: bool | None = None) -> Source:
    """Open ``path`` (``-`` for stdin) and tell JSON from JSONL: by extension (``.jsonl``,
    ``.ndjson``) or, otherwise, by whether the first line is a whole JSON value followed by more
    lines. Only the first line is read ahead; nothing else is loaded."""
    if path == "-":
        raw: IO[str] = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
        name, size = "<stdin>", None
    else:
        p = Path(path)
        raw = p.open(encoding="utf-8")
        name, size = path, p.stat().st_size
    if jsonl is None and path != "-" and Path(path).suffix.lower() in (".jsonl", ".ndjson"):
        jsonl = True
    first = raw.readline()
    if jsonl is None:
        jsonl = False
        if first.strip():
            try:
                json.loads(first)
            except ValueError:
                pass
            else:
                rest = raw.readline()
                jsonl = bool(rest.strip())
                first += rest
    stream = _Prepend(first, raw)
    return Source(name, jsonl, size, stream)

"""What the proxy knows of each provider API: where the history sits in a request body, how it
is priced (provider, wire format, system prompt, tools, structured-output schema), where usage
is reported, and the API's own error shape.

One ``Api`` per route; nothing else in the proxy reads a provider's raw shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from contextfold.request import read_request

__all__ = ["API_BY_NAME", "Api", "Pricing"]


@dataclass(frozen=True, slots=True)
class Pricing:
    """What prices a request beyond its messages, read from its top-level fields."""

    model: str | None
    system: Any
    tools: list[Any] | None
    response_format: Any
    server_history: str | None  # why the history lives upstream (not in the body), or None
    #: Why the proxy cannot read every turn the response holds, so must not offer the recall tool
    #: (it answers the calls of the one turn it reads): ``several-choices`` (chat ``n`` > 1, Gemini
    #: ``candidateCount`` > 1: a turn per choice), ``background`` (a Responses ``background``
    #: request: its turn is fetched later by a GET the proxy only forwards); None when it reads
    #: the one turn; ``tools-not-a-list``: the request's ``tools`` is no list the recall tool can
    #: join.
    no_recall: str | None = None
    #: What the body's settings (Anthropic ``thinking``, a forced ``tool_choice``, ...) add to the
    #: prompt, as `contextfold.estimate_request` prices them: paid on every call, whatever the
    #: history, so they come off the budget a compaction gets.
    settings_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Api:
    """One provider API the proxy serves.

    ``history_key`` is the top-level key of the history array; ``provider`` the estimator's
    provider; ``wire_format`` the Compactor's format."""

    name: str
    history_key: str
    provider: str
    wire_format: str

    def pricing(self, fields: dict[str, Any], path_model: str | None) -> Pricing:
        """The pricing of a request from its top-level fields (the history excluded), read by the
        core's body reader (the one `contextfold.read_request` uses): system prompt, tools and
        structured-output schema wherever this API keeps them."""
        server: str | None = None
        if self.name == "responses" and (fields.get("previous_response_id") or fields.get("conversation")):
            server = "the history is held upstream (previous_response_id / conversation)"
        no_recall = self._no_recall(fields)
        try:
            body = read_request({**fields, self.history_key: []}, provider=self.provider)
        except ValueError:
            # A field the reader rejects is the upstream's to refuse: priced without it.
            return Pricing(fields.get("model") if isinstance(fields.get("model"), str) else path_model,
                           None, None, None, server, no_recall)
        return Pricing(body.model or path_model, body.system, body.tools, body.response_format, server, no_recall,
                       body.settings_tokens)

    def _no_recall(self, fields: dict[str, Any]) -> str | None:
        """``Pricing.no_recall`` of a request with top-level ``fields``. Anthropic's Messages API
        returns one turn (no choices, no background mode): None but for its tools. ``tools`` that
        is there and not a list (a dict, a string) is no place for the recall tool: it was
        replaced by a list of the recall tool alone, the client's value gone and the provider
        never told of it (``tools-not-a-list``: folded without recall, ``tools`` sent as it came)."""
        tools = fields.get("tools")
        if tools is not None and not isinstance(tools, list):
            return "tools-not-a-list"
        if self.name == "chat":
            choices = fields.get("n")
        elif self.name == "gemini":
            # The REST API takes proto JSON field names in either spelling.
            config = fields.get("generationConfig", fields.get("generation_config"))
            choices = (config.get("candidateCount", config.get("candidate_count"))
                       if isinstance(config, dict) else None)
        else:
            return "background" if self.name == "responses" and fields.get("background") is True else None
        several = isinstance(choices, int) and not isinstance(choices, bool) and choices > 1
        return "several-choices" if several else None

    def error_body(self, status: int, message: str, kind: str) -> bytes:
        """An error in the API's own shape, so an SDK raises its usual status error."""
        if self.name == "anthropic":
            # Anthropic's error types: https://docs.anthropic.com/en/api/errors
            atype = {413: "request_too_large", 502: "api_error", 400: "invalid_request_error",
                     408: "invalid_request_error"}.get(status, "api_error")
            body: dict[str, Any] = {"type": "error", "error": {"type": atype, "message": message}}
        elif self.name == "gemini":
            # Google's error model: {"error": {"code", "message", "status"}}.
            gstatus = {413: "INVALID_ARGUMENT", 502: "UNAVAILABLE", 400: "INVALID_ARGUMENT",
                       408: "DEADLINE_EXCEEDED"}.get(status, "UNKNOWN")
            body = {"error": {"code": status, "message": message, "status": gstatus}}
        else:
            # OpenAI: {"error": {"message", "type", "param", "code"}}.
            body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        return json.dumps(body).encode()

    def stream_error(self, message: str, kind: str) -> bytes:
        """An SSE event in the form this API's SDK raises on mid-stream (a 502's error body): the
        openai SDK raises on any event whose data has an ``error`` key, google-genai on a chunk
        starting ``{"error":``, the anthropic SDK on ``event: error`` (its documented stream
        error, with the same body as its HTTP errors)."""
        event = b"event: error\n" if self.name == "anthropic" else b""
        return event + b"data: " + self.error_body(502, message, kind) + b"\n\n"


API_BY_NAME: dict[str, Api] = {
    "chat": Api("chat", "messages", "openai", "chat"),
    "responses": Api("responses", "input", "openai", "responses"),
    "anthropic": Api("anthropic", "messages", "anthropic", "anthropic"),
    "gemini": Api("gemini", "contents", "gemini", "gemini"),
}

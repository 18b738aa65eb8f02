"""Server-sent events as the proxy reads them: where an event ends, the events of a chunk, and
an event's JSON payload. One home for the framing the plain relay (``app``) and the recall relay
(``recall_loop``) both read."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["SEPARATORS", "comment", "event_end", "payload", "payloads", "split_events", "with_payload"]

#: What ends an event: a blank line (LF LF, CR LF CR LF, whose last three bytes are LF CR LF, or
#: CR CR).
SEPARATORS = (b"\n\n", b"\n\r\n", b"\r\r")
_SEPARATOR = re.compile(b"|".join(re.escape(s) for s in SEPARATORS))


def event_end(data: bytes) -> int:
    """The offset just past the last complete event in ``data``, 0 when none is complete."""
    return max((i + len(sep) for sep in SEPARATORS if (i := data.rfind(sep)) >= 0), default=0)


def split_events(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete events in ``data`` (each with its blank line) and the bytes after them."""
    events: list[bytes] = []
    at = 0
    for m in _SEPARATOR.finditer(data):
        events.append(data[at: m.end()])
        at = m.end()
    return events, data[at:]


def payload(event: bytes) -> Any:
    """An event's ``data:`` JSON (its data lines joined), or None (none, ``[DONE]``, not JSON)."""
    lines = [ln[5:].strip() for ln in event.splitlines() if ln.startswith(b"data:")]
    if not lines:
        return None
    try:
        return json.loads(b"\n".join(lines))
    except ValueError:
        return None


def payloads(data: bytes) -> list[dict[str, Any]]:
    """The JSON object of each event of a whole stream (a last event without its blank line
    included)."""
    events, rest = split_events(data)
    return [p for e in (*events, rest) if isinstance(p := payload(e), dict)]


def comment(text: str) -> bytes:
    """``text`` as an SSE comment line (``: text``), which a parser that follows the SSE spec
    skips (the openai and anthropic SDKs do; google-genai raises on it). Ended by one line break
    and no blank line: a blank line would end an event, and a parser that keeps the last event id
    (the Stainless decoder of the openai and anthropic SDKs) would then dispatch an empty one."""
    return b": " + text.encode("utf-8") + b"\n"


def with_payload(event: bytes, data: Any) -> bytes:
    """``event`` with its data replaced by ``data`` (other lines, such as ``event:``, kept)."""
    kept = [ln for ln in event.splitlines() if ln and not ln.startswith(b"data:")]
    return b"\n".join([*kept, b"data: " + json.dumps(data, separators=(",", ":")).encode()]) + b"\n\n"

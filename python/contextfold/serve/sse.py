"""Server-sent events as the proxy reads them: where an event ends, the events of a chunk, and
an event's JSON payload. One home for the framing the plain relay (``app``) and the recall relay
(``recall_loop``) both read."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["SEPARATORS", "HeldEvents", "comment", "event_end", "payload", "payloads", "split_events", "with_payload"]

#: What ends an event: a blank line (LF LF, CR LF CR LF, whose last three bytes are LF CR LF, or
#: CR CR).
SEPARATORS = (b"\n\n", b"\n\r\n", b"\r\r")
_SEPARATOR = re.compile(b"|".join(re.escape(s) for s in SEPARATORS))


def event_end(data: bytes | bytearray, start: int = 0) -> int:
    """The offset just past the last complete event in ``data`` whose blank line ends at or after
    ``start``, 0 when none does."""
    return max((i + len(sep) for sep in SEPARATORS if (i := data.rfind(sep, start)) >= 0), default=0)


class HeldEvents:
    """A stream's bytes held until the events in them are complete. ``feed`` adds a chunk and
    returns the complete events that came with it (b"" while none did); ``rest`` is what is held.
    The bytes grow in place and only the new ones (and the three before them: a blank line may
    straddle two chunks) are searched: joined and searched anew at each chunk, an upstream
    dripping 4 MB in 100-byte chunks with no blank line took 68 s to relay. ``flush_over``: held
    bytes past it go on whole (a stream that never ends an event)."""

    def __init__(self, flush_over: int | None = None) -> None:
        self._held = bytearray()
        self._flush_over = flush_over

    def feed(self, chunk: bytes) -> bytes:
        scan = max(0, len(self._held) - 3)
        self._held += chunk
        over = self._flush_over is not None and len(self._held) > self._flush_over
        cut = len(self._held) if over else event_end(self._held, scan)
        if not cut:
            return b""
        out = bytes(self._held[:cut])
        del self._held[:cut]
        return out

    @property
    def rest(self) -> bytes:
        return bytes(self._held)


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

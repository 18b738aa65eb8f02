"""A loopback HTTP server that replays recorded provider responses to the real SDK clients.

Tests queue the replies they expect (``Reply``: a recorded exchange's status, headers and body,
or a fault: a delay, a dropped connection, a malformed body), point the official SDK client at
``server.url`` and assert on what the library did and on what the SDK sent (``server.requests``).
Bounded: it binds 127.0.0.1 on a free port, answers at most ``max_requests`` requests, delays
end when the server stops, and a request with no queued reply (or on an unexpected path) gets a
418 and is recorded in ``server.errors`` for the test to assert on.

Recorded exchanges come from ``tests/data/replay/exchanges.jsonl`` (see the README beside it).
"""

from __future__ import annotations

import copy
import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent.parent / "data" / "replay" / "exchanges.jsonl"


@dataclass(frozen=True)
class Reply:
    """One queued answer. ``body``: a dict/list is sent as JSON, ``str``/``bytes`` as they are.
    ``delay`` (seconds) before answering; ``close`` drops the connection without an answer;
    ``path`` (without query), when set, must match the request's path."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    close: bool = False
    path: str | None = None
    #: Seconds between bytes of the body (a server that drips its reply), 0: all at once.
    drip: float = 0.0
    #: A body produced in pieces (``(content_length, chunks)``): a large body never held whole.
    stream: tuple[int, Any] | None = None


@dataclass(frozen=True)
class Received:
    """A request the server received: method, path (with query) and parsed JSON body."""

    method: str
    path: str
    body: Any


def load_exchanges(path: Path = DATA) -> dict[str, dict[str, Any]]:
    """Recorded exchanges by ``source`` (``<cassette>#<k>``)."""
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {row["source"]: row for row in rows}


def exchange(suffix: str) -> dict[str, Any]:
    """The one recorded exchange whose ``source`` ends with ``suffix``."""
    found = [row for source, row in load_exchanges().items() if source.endswith(suffix)]
    if len(found) != 1:
        raise KeyError(f"{len(found)} recorded exchanges end with {suffix!r}")
    return found[0]


def recorded(suffix: str, *, text: str | None = None, finish: str | None = None, **overrides: Any) -> Reply:
    """A ``Reply`` replaying a recorded exchange as it was, or with its answer text replaced by
    ``text`` (the recorded envelope kept: ids, usage, model) and its finish reason by ``finish``.
    ``overrides`` set other ``Reply`` fields (``headers``, ``delay``, ``status``)."""
    ex = exchange(suffix)
    body = copy.deepcopy(ex["response_body"])
    if text is not None or finish is not None:
        _revoice(ex["api"], body, text, finish)
    headers = dict(ex.get("response_headers") or {})
    headers.update(overrides.pop("headers", {}))
    return Reply(
        status=overrides.pop("status", ex["status"]),
        body=body,
        headers=headers,
        path=overrides.pop("path", ex["path"].split("?", 1)[0]),
        **overrides,
    )


def _revoice(api: str, body: dict[str, Any], text: str | None, finish: str | None) -> None:
    if api == "chat.completions":
        choice = body["choices"][0]
        if text is not None:
            choice["message"]["content"] = text
        if finish is not None:
            choice["finish_reason"] = finish
    elif api == "responses":
        if text is not None:
            for item in body["output"]:
                if item.get("type") == "message":
                    item["content"] = [{"type": "output_text", "text": text, "annotations": []}]
        if finish is not None:
            body["status"] = "incomplete"
            body["incomplete_details"] = {"reason": finish}
    elif api == "messages":
        if text is not None:
            body["content"] = [{"type": "text", "text": text}]
        if finish is not None:
            body["stop_reason"] = finish
    elif api == "generateContent":
        candidate = body["candidates"][0]
        if text is not None:
            candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        if finish is not None:
            candidate["finishReason"] = finish
    else:
        raise ValueError(f"cannot revoice api {api!r}")


class ReplayServer:
    """``with ReplayServer(reply, ...) as server:`` serve the queued replies on ``server.url``."""

    def __init__(self, *replies: Reply, max_requests: int = 64) -> None:
        self._replies: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        #: Notified (under ``_lock``) each time the handler takes a request off the queue.
        self._taken = threading.Condition(self._lock)
        self._stop = threading.Event()
        self.max_requests = max_requests
        self.requests: list[Received] = []
        self.errors: list[str] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def queue(self, *replies: Reply) -> None:
        """Queue more replies, answered in order."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Replies queued and not yet used."""
        with self._lock:
            return len(self._replies)

    def wait_taken(self, timeout: float) -> bool:
        """Wait until every queued reply has been taken, at most ``timeout`` seconds; True if so.

        A client that gives up (a timeout test) may do so before this server's thread has read
        the request it sent: the request is in the socket, and stopping the server now would drop
        it unread. Waiting on the queue, not on a guessed time, keeps such a test deterministic;
        a request that was never sent still leaves its reply queued."""
        with self._taken:
            return self._taken.wait_for(lambda: not self._replies, timeout)

    def __enter__(self) -> ReplayServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10  # seconds a connection may idle before the handler gives up

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                reply = server._take(Received(self.command, self.path, body))
                if reply is None:
                    self._send(418, {"error": "no reply queued for this request"}, {})
                    return
                if reply.delay:
                    server._stop.wait(reply.delay)
                if reply.close:
                    self.close_connection = True
                    return
                self._send(reply.status, reply.body, reply.headers, reply.drip, reply.stream)

            def _send(self, status: int, body: Any, headers: dict[str, str], drip: float = 0.0,
                      stream: tuple[int, Any] | None = None) -> None:
                if isinstance(body, (dict, list)):
                    data = json.dumps(body).encode()
                elif isinstance(body, str):
                    data = body.encode()
                else:
                    data = body or b""
                try:
                    self.send_response(status)
                    if not any(k.lower() == "content-type" for k in headers):
                        self.send_header("content-type", "application/json")
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(stream[0] if stream else len(data)))
                    self.end_headers()
                    if stream is not None:
                        for piece in stream[1]:
                            if server._stop.is_set():
                                return
                            self.wfile.write(piece)
                    elif drip:
                        self.wfile.flush()
                        for i in range(len(data)):
                            if server._stop.wait(drip):
                                return
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _take(self, request: Received) -> Reply | None:
        with self._taken:
            # ``wait_taken`` re-checks the queue once this lock is released, whatever returns below.
            self._taken.notify_all()
            self.requests.append(request)
            if len(self.requests) > self.max_requests:
                self.errors.append(f"more than {self.max_requests} requests: {request.method} {request.path}")
                return None
            if not self._replies:
                self.errors.append(f"unexpected request: {request.method} {request.path}")
                return None
            reply = self._replies.popleft()
            if reply.path is not None and request.path.split("?", 1)[0] != reply.path:
                self.errors.append(f"expected a request to {reply.path}, got {request.method} {request.path}")
                return None
            return reply


def serve(replies: Iterable[Reply]) -> ReplayServer:
    """A ``ReplayServer`` for ``replies`` (use it as a context manager)."""
    return ReplayServer(*replies)

"""Running ``contextfold serve`` in a test: the real ASGI app under uvicorn on a free loopback
port (``ProxyServer``), in front of a fake upstream that records every request it receives, raw
bytes and headers included, and answers with recorded provider responses (``RecordingUpstream``)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import uvicorn

from contextfold.serve.app import create_app, server_options
from contextfold.serve.config import ServeConfig
from contextfold.serve.fold_cache import FoldCache


@dataclass(frozen=True)
class Seen:
    """A request the upstream received: method, path (with query), headers, raw body."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw)


# (method, path, raw body) -> (status, headers, body bytes)
Answer = Callable[[str, str, bytes], tuple[int, dict[str, str], bytes]]


class RecordingUpstream:
    """A threaded loopback HTTP server: records each request and answers with ``answer``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> RecordingUpstream:
        up = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # one answer, two writes: no 40 ms delayed-ACK stall

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                with up._lock:
                    up.seen.append(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw))
                status, headers, body = up.answer(self.command, self.path, raw)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _serve

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()


class ProxyServer:
    """``with ProxyServer(config) as proxy:`` the app served by uvicorn on ``proxy.url``."""

    def __init__(self, config: ServeConfig, *, cache: FoldCache | None = None) -> None:
        self.app = create_app(config, cache=cache)
        self._server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                                     lifespan="on", **server_options()))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def proxy(self) -> Any:
        return self.app.state.proxy

    @property
    def url(self) -> str:
        sock = self._server.servers[0].sockets[0]
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    def __enter__(self) -> ProxyServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the proxy did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def json_answer(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    """An ``Answer`` returning ``body`` as JSON for every request."""
    data = json.dumps(body).encode()
    h = {"content-type": "application/json", **(headers or {})}
    return lambda method, path, raw: (status, h, data)


class LoopbackHandler(BaseHTTPRequestHandler):
    """A scripted upstream's handler: HTTP/1.1, each write sent at once (no Nagle delay), no log
    lines; ``start_chunked`` / ``chunk`` / ``end_chunked`` write a chunked body piece by piece (a
    stream the test paces)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def start_chunked(self, content_type: str = "text/event-stream") -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")


@contextlib.contextmanager
def loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The URL of a threaded loopback server answering with ``handler``, shut down on exit."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def raw_exchange(url: str, data: bytes, *, timeout: float = 10.0, close_after_send: bool = False,
                 pieces: int = 1) -> bytes:
    """Send ``data`` as it is on a new connection to ``url`` (``http://host:port``) and return
    what comes back until the server closes, a whole response has come (by its
    ``content-length``), or ``timeout`` seconds pass: what no HTTP client library would send (a
    URL over its limit, a body that stops, a connection dropped mid-body with
    ``close_after_send``). ``pieces``: ``data`` sent in that many parts 50 ms apart, so the
    server reads it in several reads, as a loaded network delivers it."""
    import socket

    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        step = -(-len(data) // max(1, pieces))
        for k in range(0, len(data), step):
            if k:
                time.sleep(0.05)
            s.sendall(data[k:k + step])
        if close_after_send:
            return b""
        out = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
            head, sep, rest = out.partition(b"\r\n\r\n")
            lengths = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
            if sep and lengths and len(rest) >= int(lengths[0].split(b":")[1]):
                break
        return out


def post_head(path: str, length: int, headers: bytes = b"") -> bytes:
    """The request line and headers of a JSON POST of ``length`` bytes to ``path``."""
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" + headers
            + b"content-length: " + str(length).encode() + b"\r\n\r\n")

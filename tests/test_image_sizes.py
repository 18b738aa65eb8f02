"""Images whose pixels are not in the request: image_sizes= and the opt-in header fetch."""

from __future__ import annotations

import base64
import http.server
import struct
import threading
import zlib

import pytest

import contextfold as cf

URL = "https://images.example/cat.png"
MSGS = [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                     {"type": "image_url", "image_url": {"url": URL, "detail": "high"}}]}]


def _png(w: int, h: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_mapping_and_callable_price_a_remote_image_like_its_inline_bytes():
    inline = [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(_png(512, 512)).decode(), "detail": "high"}}]}]
    want = cf.estimate(inline, model="gpt-4o")
    assert cf.estimate(MSGS, model="gpt-4o") != want  # the 1024x1024 default
    assert cf.estimate(MSGS, model="gpt-4o", image_sizes={URL: (512, 512)}) == want
    assert cf.estimate(MSGS, model="gpt-4o", image_sizes=lambda u: (512, 512) if u == URL else None) == want
    assert cf.estimate_each(MSGS, model="gpt-4o", image_sizes={URL: (512, 512)}) == cf.estimate_each(inline, model="gpt-4o")
    assert cf.count(MSGS, model="gpt-4o", image_sizes={URL: (512, 512)}) == cf.count(inline, model="gpt-4o")
    s = cf.Session(model="gpt-4o", image_sizes={URL: (512, 512)})
    assert s.estimate(MSGS) == want


def test_only_unsized_references_are_asked_once_each():
    asked: list[str] = []

    def sizes(u: str):
        asked.append(u)
        return None

    ms = MSGS + MSGS + [{"role": "user", "content": "no image"}]
    assert cf.estimate(ms, model="gpt-4o", image_sizes=sizes) == cf.estimate(ms, model="gpt-4o")
    assert asked == [URL]


def test_bad_sizes_raise_clear_errors():
    with pytest.raises(TypeError, match="width, height"):
        cf.estimate(MSGS, image_sizes={URL: "big"})
    with pytest.raises(ValueError, match="positive"):
        cf.estimate(MSGS, image_sizes={URL: (0, 10)})
    with pytest.raises(TypeError, match="mapping"):
        cf.estimate(MSGS, image_sizes=42)


class _Handler(http.server.BaseHTTPRequestHandler):
    body = _png(1600, 900) + b"\0" * 200_000
    ranges: list[str | None] = []

    def do_GET(self):  # noqa: N802 - http.server API
        type(self).ranges.append(self.headers.get("Range"))
        if self.path == "/slow.png":
            threading.Event().wait(2.0)
        if self.path == "/missing.png":
            self.send_error(404)
            return
        rng = self.headers.get("Range")
        body = self.body
        if rng and self.path != "/norange.png":
            end = int(rng.split("-")[1])
            body = body[: end + 1]
            self.send_response(206)
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Handler.ranges = []
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_fetch_reads_only_the_header_with_a_range_request(server):
    assert cf.fetch_image_size(f"{server}/cat.png", max_bytes=1024) == (1600, 900)
    assert _Handler.ranges == ["bytes=0-1023"]
    # A server that ignores Range is read no further than max_bytes.
    assert cf.fetch_image_size(f"{server}/norange.png", max_bytes=1024) == (1600, 900)


def test_fetch_failures_are_none(server):
    assert cf.fetch_image_size(f"{server}/missing.png") is None
    assert cf.fetch_image_size(f"{server}/slow.png", timeout=0.2) is None
    assert cf.fetch_image_size("file:///etc/passwd") is None


def test_http_image_sizes_prices_with_the_fetched_size_and_caches(server):
    url = f"{server}/cat.png"
    ms = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    sizes = cf.http_image_sizes(timeout=2.0)
    est = cf.estimate(ms, model="claude-sonnet-4-5", provider="openai", image_sizes=sizes)
    assert est == cf.estimate(ms, model="claude-sonnet-4-5", provider="openai", image_sizes={url: (1600, 900)})
    cf.estimate(ms, model="claude-sonnet-4-5", provider="openai", image_sizes=sizes)
    assert len(_Handler.ranges) == 1

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


@pytest.fixture
def raw_server():
    """A TCP server answering each connection with ``raw_server.answer(conn)`` (bytes as it likes)."""
    import socket

    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    state: dict = {}

    def serve() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.recv(65536)
                try:
                    state["answer"](conn, stop)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield state, f"http://127.0.0.1:{sock.getsockname()[1]}/x.png"
    stop.set()
    t.join(5)
    sock.close()


def test_an_answer_that_is_not_http_is_none(raw_server):
    state, url = raw_server
    state["answer"] = lambda conn, stop: conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    assert cf.fetch_image_size(url, timeout=2) is None
    # So an estimate given http_image_sizes() prices the image by the default, not raises.
    ms = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    assert cf.estimate(ms, image_sizes=cf.http_image_sizes(timeout=2)) == cf.estimate(ms)


def test_a_server_dripping_the_image_is_left_at_the_timeout(raw_server):
    import time

    def drip(conn, stop) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 65536\r\n\r\n")
        while not stop.wait(0.2):
            conn.sendall(b"\0")

    state, url = raw_server
    state["answer"] = drip
    start = time.monotonic()
    # 64 bytes one every 0.2 s would take 13 s: each read waited under the timeout.
    assert cf.fetch_image_size(url, timeout=1.0, max_bytes=64) is None
    assert time.monotonic() - start < 2.5


def test_http_image_sizes_prices_with_the_fetched_size_and_caches(server):
    url = f"{server}/cat.png"
    ms = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    sizes = cf.http_image_sizes(timeout=2.0)
    est = cf.estimate(ms, model="claude-sonnet-4-5", provider="openai", image_sizes=sizes)
    assert est == cf.estimate(ms, model="claude-sonnet-4-5", provider="openai", image_sizes={url: (1600, 900)})
    cf.estimate(ms, model="claude-sonnet-4-5", provider="openai", image_sizes=sizes)
    assert len(_Handler.ranges) == 1


# Uploaded images, each in its provider's documented shape, beside the same 512x512 image sent
# inline in that format: (provider, reference, by-file message, inline message).
_B64 = base64.b64encode(_png(512, 512)).decode()
_DATA_URL = "data:image/png;base64," + _B64
FILE_IMAGES = {
    # https://platform.openai.com/docs/api-reference/responses/create (input_image.file_id)
    "openai_responses": ("openai", "file-6F2ksmvXxt4VdoqmHRw6kL",
        {"role": "user", "content": [{"type": "input_text", "text": "what is this?"},
                                     {"type": "input_image", "file_id": "file-6F2ksmvXxt4VdoqmHRw6kL", "detail": "high"}]},
        {"role": "user", "content": [{"type": "input_text", "text": "what is this?"},
                                     {"type": "input_image", "image_url": _DATA_URL, "detail": "high"}]}),
    # Assistants messages: image_file.file_id
    "openai_image_file": ("openai", "file-BK7bzQj3FfZFXr7DbL6xJwfo",
        {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                     {"type": "image_file", "image_file": {"file_id": "file-BK7bzQj3FfZFXr7DbL6xJwfo", "detail": "high"}}]},
        {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                     {"type": "image_url", "image_url": {"url": _DATA_URL, "detail": "high"}}]}),
    # https://docs.anthropic.com/en/docs/build-with-claude/files (source.type "file")
    "anthropic": ("anthropic", "file_011CNha8iCJcU1wXNR6q4V8w",
        {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                     {"type": "image", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}}]},
        {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _B64}}]}),
    # https://ai.google.dev/api/caching#FileData
    "gemini": ("gemini", "https://generativelanguage.googleapis.com/v1beta/files/a1b2c3",
        {"role": "user", "parts": [{"text": "what is this?"},
                                   {"fileData": {"mimeType": "image/png", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/a1b2c3"}}]},
        {"role": "user", "parts": [{"text": "what is this?"}, {"inlineData": {"mimeType": "image/png", "data": _B64}}]}),
    "gemini_snake": ("gemini", "https://generativelanguage.googleapis.com/v1beta/files/a1b2c3",
        {"role": "user", "parts": [{"text": "what is this?"},
                                   {"file_data": {"mime_type": "image/png", "file_uri": "https://generativelanguage.googleapis.com/v1beta/files/a1b2c3"}}]},
        {"role": "user", "parts": [{"text": "what is this?"}, {"inline_data": {"mime_type": "image/png", "data": _B64}}]}),
    # Bedrock Converse ImageSource.s3Location
    "bedrock": ("anthropic", "s3://my-bucket/photos/cat.png",
        {"role": "user", "content": [{"text": "what is this?"},
                                     {"image": {"format": "png", "source": {"s3Location": {"uri": "s3://my-bucket/photos/cat.png"}}}}]},
        {"role": "user", "content": [{"text": "what is this?"},
                                     {"image": {"format": "png", "source": {"bytes": _png(512, 512)}}}]}),
}


@pytest.mark.parametrize("fmt", sorted(FILE_IMAGES))
def test_an_uploaded_image_is_sized_by_its_file_id_like_the_same_image_inline(fmt):
    provider, ref, by_file, inline = FILE_IMAGES[fmt]
    ms, inline_ms = [by_file], [inline]
    want = cf.estimate(inline_ms, provider=provider, model="")
    assert cf.estimate(ms, provider=provider) != want  # the 1024x1024 default
    asked: list[str] = []

    def sizes(r: str) -> tuple[int, int] | None:
        asked.append(r)
        return (512, 512) if r == ref else None

    assert cf.estimate(ms, provider=provider, image_sizes=sizes) == want
    assert asked == [ref]
    assert cf.estimate_each(ms, provider=provider, image_sizes={ref: (512, 512)}) == cf.estimate_each(inline_ms, provider=provider)
    assert cf.Session(provider=provider, image_sizes={ref: (512, 512)}).estimate(ms) == want

    before = cf.breakdown(ms, provider=provider)
    (u,) = before.unmeasured
    assert (u.index, u.kind) == (0, "image") and "file id" in u.reason
    assert before.total == cf.estimate(ms, provider=provider)
    after = cf.breakdown(ms, provider=provider, image_sizes={ref: (512, 512)})
    assert after.unmeasured == ()
    assert after.total == want == sum(after.by_kind.values()) == sum(after.by_role.values())
    assert after.by_kind["images"] == cf.breakdown(inline_ms, provider=provider).by_kind["images"]


def test_count_sizes_an_openai_file_id():
    provider, ref, by_file, inline = FILE_IMAGES["openai_image_file"]
    assert cf.count([by_file], model="gpt-4o", image_sizes={ref: (512, 512)}) == cf.count([inline], model="gpt-4o")


def test_breakdown_total_equals_estimate_with_the_same_image_sizes():
    ms = [*MSGS, FILE_IMAGES["openai_responses"][2], {"role": "assistant", "content": "a cat"}]
    sizes = {URL: (300, 200), FILE_IMAGES["openai_responses"][1]: (4000, 3000)}
    for model in ["gpt-4o", "gpt-4.1-mini", "claude-sonnet-4-6", "gemini-2.5-pro", ""]:
        b = cf.breakdown(ms, model=model, tools=None, system="Be brief.", image_sizes=sizes)
        assert b.total == cf.estimate(ms, model=model, system="Be brief.", image_sizes=sizes), model
        assert [m.tokens for m in b.per_message] == cf.estimate_each(ms, model=model, image_sizes=sizes)
        assert b.unmeasured == ()
    # Sizing one of the two leaves the other listed.
    b = cf.breakdown(ms, model="gpt-4o", image_sizes={URL: (300, 200)})
    assert [(u.index, u.kind) for u in b.unmeasured] == [(1, "image")]


def test_breakdown_sizes_an_image_inside_a_tool_result():
    ref = "file_011CNha8iCJcU1wXNR6q4V8w"
    ms = [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}]},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
              {"type": "text", "text": "the screen"},
              {"type": "image", "source": {"type": "file", "file_id": ref}}]}]}]
    plain = cf.breakdown(ms, provider="anthropic")
    sized = cf.breakdown(ms, provider="anthropic", image_sizes={ref: (200, 100)})
    assert sized.total == cf.estimate(ms, provider="anthropic", image_sizes={ref: (200, 100)}) < plain.total
    assert sized.per_message[1].by_kind["tool_outputs"] == plain.per_message[1].by_kind["tool_outputs"]
    # Anthropic: ceil(200/28) * ceil(100/28) = 8 * 4 patches.
    assert sized.per_message[1].by_kind["images"] == 32
    assert sized.unmeasured == () and len(plain.unmeasured) == 1


# Audio and documents sent without their bytes, in each format's documented shape: listed with
# what was assumed.
MEDIA_BY_REFERENCE = [
    ("openai", {"type": "file", "file": {"file_id": "file-pdf1"}}, "document"),
    ("openai", {"type": "input_file", "file_id": "file-pdf1"}, "document"),
    ("openai", {"type": "input_file", "file_url": "https://example.com/report.pdf"}, "document"),
    ("anthropic", {"type": "document", "source": {"type": "file", "file_id": "file_011pdf"}}, "document"),
    ("anthropic", {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}}, "document"),
    ("gemini", {"fileData": {"mimeType": "audio/mp3", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/aud"}}, "audio"),
    ("gemini", {"fileData": {"mimeType": "application/pdf", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/pdf"}}, "document"),
    ("gemini", {"fileData": {"mimeType": "video/mp4", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/vid"}}, "video"),
    ("anthropic", {"document": {"format": "pdf", "name": "report", "source": {"s3Location": {"uri": "s3://b/report.pdf"}}}}, "document"),
]


@pytest.mark.parametrize(("provider", "part", "kind"), MEDIA_BY_REFERENCE)
def test_audio_and_documents_without_their_bytes_are_listed_with_a_reason(provider, part, kind):
    key = "parts" if provider == "gemini" else "content"
    ms = [{"role": "user", key: [part]}]
    b = cf.breakdown(ms, provider=provider)
    (u,) = b.unmeasured
    assert (u.index, u.kind) == (0, kind)
    assert "without inline data" in u.reason and u.assumed_tokens > 0
    assert b.total == cf.estimate(ms, provider=provider)


def test_media_with_inline_bytes_is_measured_and_a_bedrock_pdf_is_priced_by_pages():
    pdf = b"%PDF-1.7\n" + b"0" * 120_000  # 3 pages at the assumed 50 KB per page
    ms = [{"role": "user", "content": [{"document": {"format": "pdf", "name": "report", "source": {"bytes": pdf}}}]}]
    b = cf.breakdown(ms, provider="anthropic")
    assert b.unmeasured == ()
    # Priced per page (Anthropic ~1,600 tokens a page), not by its base64 length (~40k tokens).
    assert b.by_kind["media"] == 3 * 1600
    audio = [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "UklGR" * 1000, "format": "wav"}}]}]
    assert cf.breakdown(audio).unmeasured == ()

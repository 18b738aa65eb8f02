"""``contextfold serve`` against hostile and broken clients and upstreams: whatever one request
holds, the proxy answers it (a 4xx in the provider's own error shape, or the request forwarded
unchanged for the provider to judge), never a 500, never a hang, never a corrupted body sent
upstream, and keeps serving the next request. Each test pins a case a fuzz pass over the proxy
found broken (docs/hostile-input.md, "The proxy"); the proxy runs under uvicorn on a loopback
port in front of a loopback upstream, driven by raw httpx or sockets where no SDK could send
the input."""

from __future__ import annotations

import gzip
import json
import logging
import time
import warnings
from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import httpx
from contextfold.serve.config import ServeConfig

from proxy_support import LoopbackHandler, ProxyServer, RecordingUpstream, json_answer, loopback, post_head, raw_exchange
from wire_shapes import convert

ROUTES = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/gemini-2.5-flash:generateContent",
}
HISTORY_KEY = {"chat": "messages", "responses": "input", "anthropic": "messages", "gemini": "contents"}
SHAPE = {"chat": "openai", "responses": "responses", "anthropic": "anthropic", "gemini": "gemini"}
#: A gate every test body is over, so each request compacts.
GATED = {"trigger": 2000, "budget": 1000, "context_window": 128_000}


def dialogue(turns: int = 6, words: int = 60) -> list[dict[str, Any]]:
    """A chat agent loop (tool calls and their results) long enough to compact at ``GATED``."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful assistant."}]
    for t in range(turns):
        msgs.append({"role": "user", "content": f"Question {t}: " + " ".join(f"w{t}_{i}" for i in range(words))})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{t}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": t})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": " ".join(f"r{t}_{i}" for i in range(words))})
        msgs.append({"role": "assistant", "content": f"Answer {t}: " + " ".join(f"a{t}_{i}" for i in range(words))})
    msgs.append({"role": "user", "content": "And now?"})
    return msgs


def request_body(api: str, msgs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A request of ``api`` holding ``msgs`` (default: ``dialogue()``) in its own shape."""
    history = convert(msgs if msgs is not None else dialogue(), SHAPE[api])
    if api == "anthropic":
        return {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": history}
    if api == "gemini":
        return {"contents": history}
    return {"model": "gpt-4o", HISTORY_KEY[api]: history}


@pytest.mark.parametrize("api", list(ROUTES))
def test_a_lone_surrogate_in_a_folded_message_is_sent_escaped_not_a_500(api):
    # JSON.stringify (and json.dumps) write a lone surrogate as the escape "\ud800": valid JSON,
    # which Python reads as a str with no UTF-8 form.
    # In the system prompt: the head every fold keeps as it is (the first user turn where the API
    # takes the system prompt out of the list).
    msgs = dialogue()
    msgs[0]["content"] += " Text cut mid-emoji \ud83d"
    raw = json.dumps(request_body(api, msgs)).encode()
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        r = httpx.post(proxy.url + ROUTES[api], content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
        assert r.headers["x-contextfold-fold"] == "new"
        (seen,) = up.seen
        sent = json.loads(seen.raw.decode("utf-8"))  # strict UTF-8: no surrogate written raw
        assert "Text cut mid-emoji \ud83d" in json.dumps(sent[HISTORY_KEY[api]][0], ensure_ascii=False)
        assert len(seen.raw) < len(raw)


def _metric(proxy: ProxyServer, prefix: str) -> dict[str, float]:
    """The /metrics samples whose line starts with ``prefix``, by their labels."""
    lines = httpx.get(proxy.url + "/metrics").text.splitlines()
    return {ln.split(" ")[0]: float(ln.split(" ")[1]) for ln in lines if ln.startswith(prefix)}


def test_a_turn_appending_more_than_fast_append_max_is_read_on_a_worker_not_on_the_event_loop():
    from contextfold.serve.folding import FAST_APPEND_MAX

    msgs = dialogue()
    # Under the gate: no compaction, only the read.
    with RecordingUpstream(json_answer({"ok": True})) as up, \
            ProxyServer(ServeConfig(upstream=up.url, context_window=100_000_000)) as proxy:
        url = proxy.url + ROUTES["chat"]
        httpx.post(url, content=json.dumps(request_body("chat", msgs)))
        small = msgs + [{"role": "user", "content": "one more"}]
        httpx.post(url, content=json.dumps(request_body("chat", small)))
        many = small + [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}] * 8_000
        raw = json.dumps(request_body("chat", many)).encode()
        assert len(raw) - len(json.dumps(request_body("chat", small))) > FAST_APPEND_MAX
        assert httpx.post(url, content=raw).status_code == 200
        reads = _metric(proxy, "contextfold_body_reads_total")
        assert reads == {'contextfold_body_reads_total{api="chat",read="appended"}': 1.0,
                         'contextfold_body_reads_total{api="chat",read="whole"}': 2.0}
        assert up.seen[-1].raw == raw


def test_header_values_beyond_ascii_are_forwarded_as_the_bytes_that_came_not_a_500():
    # h11 takes any byte from 0x80 in a header value; a client names its app in UTF-8 (OpenRouter's
    # X-Title), or sends latin-1. httpx refuses to encode such a str: every such request was a 500.
    raw = json.dumps(request_body("chat")).encode()
    title, legacy = "Café Ünïcode €".encode(), b"caf\xe9"
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        r = httpx.post(proxy.url + ROUTES["chat"], content=raw, headers={"x-title": title, "x-legacy": legacy})
        assert r.status_code == 200, r.text
        # (The upstream's http.server reads header values as latin-1.)
        assert up.seen[0].headers["x-title"].encode("latin-1") == title
        assert up.seen[0].headers["x-legacy"].encode("latin-1") == legacy


def test_a_response_header_beyond_latin_1_from_the_upstream_is_relayed_as_its_bytes():
    value = "gpt-4o \u2013 r\u00e9gion \u20ac".encode()
    answer = json.dumps({"ok": True}).encode()

    def upstream(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        # http.server writes header values as latin-1: these are the UTF-8 bytes of ``value``.
        return 200, {"content-type": "application/json", "x-upstream-note": value.decode("latin-1")}, answer

    with RecordingUpstream(upstream) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        r = httpx.post(proxy.url + ROUTES["chat"], content=json.dumps(request_body("chat")))
        assert r.status_code == 200, r.text
        assert r.headers.raw[[k for k, _ in r.headers.raw].index(b"x-upstream-note")][1] == value


def test_a_path_is_forwarded_with_its_percent_escapes_and_a_url_past_httpx_s_limit_is_a_400_in_the_api_s_shape():
    gemini = json.dumps(request_body("gemini")).encode()
    # (Under the gate: the models named in these paths are unknown, which only compacting minds.)
    with RecordingUpstream(json_answer({"ok": True})) as up, \
            ProxyServer(ServeConfig(upstream=up.url, context_window=100_000_000)) as proxy:
        # "%00" decoded made a URL httpx refuses (a 500); "%3F" stays in the path, no query starts.
        for model in ("x%00y", "x%3Falt=sse%26key=k"):
            r = httpx.post(proxy.url + f"/v1beta/models/{model}:generateContent", content=gemini)
            assert r.status_code == 200, r.text
            assert up.seen[-1].path == f"/v1beta/models/{model}:generateContent"
        for api in ROUTES:
            path = ROUTES[api] + "?pad=" + "x" * 70_000
            # (In pieces: a head that came in several reads past h11's default 16 KiB got a
            # plain-text 400 from uvicorn before the proxy saw it; `serve.app.MAX_HEAD_BYTES`.)
            out = raw_exchange(proxy.url, post_head(path, 2) + b"{}", pieces=4)
            status, _, rest = out.partition(b"\r\n")
            assert status == b"HTTP/1.1 400 Bad Request", out[:200]
            error = json.loads(rest.partition(b"\r\n\r\n")[2])
            message = error["error"]["message"]
            assert "URL cannot be forwarded: URL too long" in message
            assert (error.get("type") == "error") == (api == "anthropic")
        assert httpx.get(proxy.url + "/healthz").status_code == 200


def test_a_body_that_stops_coming_is_a_408_in_the_api_s_shape_within_the_body_timeout():
    with RecordingUpstream(json_answer({"ok": True})) as up, \
            ProxyServer(ServeConfig(upstream=up.url, body_timeout=0.5, **GATED)) as proxy:
        for api in ROUTES:
            t0 = time.perf_counter()
            out = raw_exchange(proxy.url, post_head(ROUTES[api], 10_000) + b'{"messages": [', timeout=10)
            took = time.perf_counter() - t0
            assert out.startswith(b"HTTP/1.1 408 "), out[:200]
            assert 0.5 <= took < 3, took
            body = json.loads(out.partition(b"\r\n\r\n")[2])
            assert "not received within 0.5 s (14 bytes came)" in json.dumps(body)
        assert up.seen == []


def test_a_body_over_max_body_bytes_is_a_413_in_the_api_s_shape_declared_or_chunked():
    raw = json.dumps(request_body("chat")).encode()
    with RecordingUpstream(json_answer({"ok": True})) as up, \
            ProxyServer(ServeConfig(upstream=up.url, max_body_bytes=len(raw) - 1, **GATED)) as proxy:
        for api in ROUTES:
            declared = httpx.post(proxy.url + ROUTES[api], content=raw)
            chunked = httpx.post(proxy.url + ROUTES[api], content=iter([raw[:1000], raw[1000:]]))
            for r in (declared, chunked):
                assert r.status_code == 413, r.text
                assert f"limit of {len(raw) - 1} bytes" in r.text
            assert ("error" in declared.json()) and (declared.json().get("type") == "error") == (api == "anthropic")
        assert up.seen == []
        # A body within the limit, and a path the proxy does not compact, go through.
        assert httpx.post(proxy.url + ROUTES["chat"], content=raw[:100] + b"}").status_code == 200
        assert httpx.post(proxy.url + "/v1/files", content=raw + raw).status_code == 200


def test_a_client_gone_mid_body_logs_no_traceback_and_the_next_request_is_served():
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append  # type: ignore[method-assign]
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        # (Added once uvicorn has configured its loggers, which drops the handlers they had.)
        logging.getLogger("uvicorn.error").addHandler(handler)
        try:
            for api in ROUTES:
                raw_exchange(proxy.url, post_head(ROUTES[api], 10_000) + b'{"model": "x"', close_after_send=True)
            time.sleep(0.3)
            assert httpx.post(proxy.url + ROUTES["chat"], content=json.dumps(request_body("chat"))).status_code == 200
        finally:
            logging.getLogger("uvicorn.error").removeHandler(handler)
    assert [r.getMessage() for r in records] == []


def test_unknown_model_names_from_clients_warn_nothing_and_are_logged_once_clipped(caplog):
    # Each distinct name was a warning carrying it whole: 100 KB on stderr per request, and kept in
    # the warnings registry for good.
    names = [f"model-{i}-" + "x" * 20_000 for i in range(3)]
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy, \
            warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, "contextfold.serve"):
        warnings.simplefilter("always")
        for i, name in enumerate(names * 2):
            msgs = dialogue()
            msgs[1]["content"] = f"conversation {i} " + msgs[1]["content"]
            body = {**request_body("chat", msgs), "model": name}
            r = httpx.post(proxy.url + ROUTES["chat"], content=json.dumps(body))
            assert r.status_code == 200 and r.headers["x-contextfold-fold"] == "new", r.text
    assert [str(w.message)[:80] for w in caught] == []
    logged = [r.getMessage() for r in caplog.records if "unknown model" in r.getMessage()]
    assert len(logged) == 3 and all(len(m) < 200 for m in logged), logged


def test_a_gzip_bomb_in_a_request_body_is_a_413_not_inflated_in_the_proxy():
    # 8 MiB of one letter in 8 KB: decoded, it is held and parsed as a plain body of its size is,
    # so it is bounded the same way.
    bomb = gzip.compress(b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "' + b"a" * (8 << 20) + b'"}]}')
    with RecordingUpstream(json_answer({"ok": True})) as up, \
            ProxyServer(ServeConfig(upstream=up.url, max_body_bytes=1 << 20, **GATED)) as proxy:
        r = httpx.post(proxy.url + ROUTES["chat"], content=bomb,
                       headers={"content-type": "application/json", "content-encoding": "gzip"})
        assert r.status_code == 413, r.text
        assert "over this proxy's limit of 1048576 bytes once its gzip encoding is decoded" in r.json()["error"]["message"]
        assert up.seen == []
        # The same body under the limit is read and compacted.
        ok = gzip.compress(json.dumps(request_body("chat")).encode())
        r = httpx.post(proxy.url + ROUTES["chat"], content=ok,
                       headers={"content-type": "application/json", "content-encoding": "gzip"})
        assert r.status_code == 200 and r.headers["x-contextfold-fold"] == "new"


@pytest.mark.parametrize(("coding", "data", "says"), [
    ("br", b"\x0b\x02\x80{}\x03", "content-encoding 'br' is not one this proxy reads"),
    ("zstd", b"(\xb5/\xfd\x00X\x11\x00\x00{}", "content-encoding 'zstd' is not one this proxy reads"),
    ("gzip", b"\x1f\x8bnot gzip at all", "its gzip encoding does not decode"),
    ("gzip", gzip.compress(b'{"model": "gpt-4o"}')[:-12], "its gzip data ends before its end"),
], ids=["br", "zstd", "corrupt-gzip", "cut-gzip"])
def test_a_body_in_an_encoding_not_read_is_forwarded_as_it_came_saying_so(coding, data, says):
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        r = httpx.post(proxy.url + ROUTES["chat"], content=data,
                       headers={"content-type": "application/json", "content-encoding": coding})
        assert r.status_code == 200
        assert says in r.headers["x-contextfold-not-compacted"]
        (seen,) = up.seen
        assert seen.raw == data and seen.headers["content-encoding"] == coding


def _answering(status: int, headers: dict[str, str], payload: bytes) -> type[LoopbackHandler]:
    """A loopback upstream handler answering every POST with ``status`` (any three digits: the
    status line is written by hand), ``headers`` and ``payload``."""

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            self.wfile.write(head.encode() + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)

    return Handler


def test_a_gzip_bomb_from_the_upstream_is_relayed_compressed_not_inflated_in_the_proxy():
    # 64 MiB of zeros in 64 KB: read decoded and whole, 1 GiB of them took the proxy to 3.2 GB RSS.
    bomb = gzip.compress(b'{"choices": [], "pad": "' + b"0" * (64 << 20) + b'"}', compresslevel=9)
    with loopback(_answering(200, {"content-type": "application/json", "content-encoding": "gzip"}, bomb)) as up, \
            ProxyServer(ServeConfig(upstream=up, **GATED)) as proxy:
        with httpx.stream("POST", proxy.url + ROUTES["chat"], content=json.dumps(request_body("chat"))) as r:
            raw = b"".join(r.iter_raw())
        assert r.status_code == 200
        assert r.headers["content-encoding"] == "gzip"
        assert raw == bomb


def test_a_json_response_past_max_held_response_goes_on_as_it_comes():
    from contextfold.serve.app import MAX_HELD_RESPONSE

    big = b'{"x": "' + b"a" * (MAX_HELD_RESPONSE + 1000) + b'"}'
    with loopback(_answering(200, {"content-type": "application/json"}, big)) as up, \
            ProxyServer(ServeConfig(upstream=up, **GATED)) as proxy:
        r = httpx.post(proxy.url + ROUTES["chat"], content=json.dumps(request_body("chat")))
        assert r.status_code == 200 and r.content == big
        # Streamed on: no content-length was known when the first bytes went.
        assert "content-length" not in r.headers


@pytest.mark.parametrize("status", [600, 999])
def test_an_upstream_status_outside_100_to_599_is_a_502_in_the_api_s_shape(status):
    with loopback(_answering(status, {"content-type": "application/json"}, b"{}")) as up, \
            ProxyServer(ServeConfig(upstream=up, **GATED)) as proxy:
        for api in ROUTES:
            r = httpx.post(proxy.url + ROUTES[api], content=json.dumps(request_body(api)))
            assert r.status_code == 502, r.text
            assert f"invalid HTTP status {status}" in r.text
            assert (r.json().get("type") == "error") == (api == "anthropic")


class _EndlessEvent(LoopbackHandler):
    """A streamed answer whose one event never ends: ``MAX_HELD_RESPONSE`` bytes and more of a
    ``data:`` line with no blank line after it."""

    def do_POST(self) -> None:
        from contextfold.serve.app import MAX_HELD_RESPONSE

        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.start_chunked()
        try:
            self.chunk(b"data: ")
            for _ in range(MAX_HELD_RESPONSE // (1 << 20) + 2):
                self.chunk(b"x" * (1 << 20))
            self.end_chunked()
        except (BrokenPipeError, ConnectionResetError):
            pass


def test_a_streamed_recall_round_past_max_held_response_ends_with_an_error_the_sdk_raises():
    # A stream sent with the recall tool is held to read its calls: an upstream that never ended
    # its event grew the proxy without bound, re-reading the event at each chunk.
    import openai

    with loopback(_EndlessEvent) as up, ProxyServer(ServeConfig(upstream=up, recall=True, **GATED)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0, timeout=20)
        t0 = time.perf_counter()
        with pytest.raises(openai.APIError) as e:
            for _ in client.chat.completions.create(model="gpt-4o", messages=dialogue(), stream=True):
                pass
        assert "sent a streamed round over 16777216 bytes" in str(e.value)
        assert time.perf_counter() - t0 < 10
        client.close()
        assert _metric(proxy, "contextfold_upstream_errors_total") == {"contextfold_upstream_errors_total": 1.0}


def _corrupted(data: bytes, how: str) -> bytes:
    head, _, payload = data.partition(b"\n")
    meta = json.loads(head)
    return {
        "payload cut": head + b"\n" + payload[: len(payload) // 2],
        "payload not UTF-8": head + b"\n" + payload[:10] + b"\xff" + payload[10:],
        "payload of numbers": head + b"\n1,2,3",
        "count off by one": json.dumps({**meta, "count": meta["count"] + 1}).encode() + b"\n" + payload,
        "negative tokens": json.dumps({**meta, "tokens": -10**9}).encode() + b"\n" + payload,
        "CR LF in the strategy": json.dumps({**meta, "strategy": "mask\r\nx-injected: 1"}).encode() + b"\n" + payload,
    }[how]


@pytest.mark.parametrize("how", ["payload cut", "payload not UTF-8", "payload of numbers", "count off by one",
                                 "negative tokens", "CR LF in the strategy"])
def test_a_corrupt_fold_in_redis_is_read_as_a_miss_and_the_body_sent_is_valid(redis_url, how):
    from contextfold.serve.fold_cache import RedisFoldCache

    prefix = f"hostile:{how}:"
    msgs = dialogue()
    first = json.dumps(request_body("chat", msgs))
    nxt = json.dumps(request_body("chat", msgs + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]))
    with RecordingUpstream(json_answer({"ok": True})) as up:
        with ProxyServer(ServeConfig(upstream=up.url, **GATED), cache=RedisFoldCache(redis_url, prefix=prefix)) as proxy:
            assert httpx.post(proxy.url + ROUTES["chat"], content=first).headers["x-contextfold-fold"] == "new"
        cache = RedisFoldCache(redis_url, prefix=prefix)
        (key,) = cache.client.keys(prefix + "fold:*")
        cache.client.set(key, _corrupted(cache.client.get(key), how))
        # A restarted proxy (nothing in memory) reads the next turn's fold from Redis.
        with ProxyServer(ServeConfig(upstream=up.url, **GATED), cache=cache) as proxy:
            r = httpx.post(proxy.url + ROUTES["chat"], content=nxt)
        assert r.status_code == 200 and r.headers["x-contextfold-fold"] == "new", r.text
        sent = json.loads(up.seen[-1].raw)
        assert all(isinstance(m, dict) and m.get("role") for m in sent["messages"])
        assert "x-injected" not in r.headers


@pytest.mark.parametrize("api", list(ROUTES))
def test_a_body_with_its_history_key_twice_is_forwarded_unchanged_saying_so(api):
    # A provider's JSON parser keeps the last of the two: compacting the first, the proxy said it
    # had folded a history the provider never read.
    key = HISTORY_KEY[api]
    raw = json.dumps(request_body(api))
    short = json.dumps(request_body(api, dialogue()[:2])[key])
    bodies = [raw[:-1] + f', "{key}": {short}}}', f'{{"{key}": "first", ' + raw[1:]]
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        for body in bodies:
            r = httpx.post(proxy.url + ROUTES[api], content=body)
            assert r.status_code == 200
            assert r.headers["x-contextfold-fold"] == "none"
            assert r.headers["x-contextfold-not-compacted"] == f"body not read: duplicate key '{key}'"
            assert up.seen[-1].raw == body.encode()
        # A turn that extends a known body (read from where it ended) with the key again.
        httpx.post(proxy.url + ROUTES[api], content=raw)
        extended = raw[:-1] + f', "{key}": {short}}}'
        r = httpx.post(proxy.url + ROUTES[api], content=extended)
        assert r.headers["x-contextfold-not-compacted"] == f"body not read: duplicate key '{key}'"
        assert up.seen[-1].raw == extended.encode()


def test_a_target_that_is_no_path_is_a_404_in_the_api_s_shape_and_any_path_is_forwarded():
    with RecordingUpstream(json_answer({"ok": True})) as up, ProxyServer(ServeConfig(upstream=up.url, **GATED)) as proxy:
        # A line break in the path (starlette's "{path:path}" stopped at it: a plain-text 404).
        out = raw_exchange(proxy.url, post_head("/v1/chat%0Acompletions", 2) + b"{}")
        assert out.startswith(b"HTTP/1.1 200 "), out[:200]
        assert up.seen[-1].path == "/v1/chat%0Acompletions"
        # A whole URL as the target, and "*": no path to forward; the answer is the API's JSON.
        for target, anthropic in ((b"http://evil.example/v1/chat/completions", b""), (b"*", b"anthropic-version: 1\r\n")):
            out = raw_exchange(proxy.url, b"OPTIONS " + target + b" HTTP/1.1\r\nhost: x\r\n" + anthropic
                               + b"content-length: 0\r\n\r\n")
            assert out.startswith(b"HTTP/1.1 404 "), out[:200]
            error = json.loads(out.partition(b"\r\n\r\n")[2])
            assert "no route for OPTIONS" in json.dumps(error)
            assert (error.get("type") == "error") == bool(anthropic)
        # OPTIONS on a path is forwarded (it was starlette's plain-text 405): the loopback upstream's
        # http.server answers it with its 501.
        r = httpx.options(proxy.url + "/v1/models")
        assert r.status_code == 501 and "Unsupported method" in r.text


class _Drip(LoopbackHandler):
    """A stream of one 2 MB event sent in 100-byte chunks, then its blank line and a usage event."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.start_chunked()
        self.chunk(b'data: {"pad": "')
        for _ in range(20_000):
            self.chunk(b"x" * 100)
        self.chunk(b'"}\n\n')
        self.chunk(b'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}\n\ndata: [DONE]\n\n')
        self.end_chunked()


def test_a_stream_dripped_in_small_chunks_is_relayed_in_linear_time():
    # The held bytes (and the usage reader's line) were joined anew with each chunk and searched
    # whole: 4 MB in 100-byte chunks took 68 s, holding the event loop.
    with loopback(_Drip) as up, ProxyServer(ServeConfig(upstream=up, context_window=128_000)) as proxy:
        t0 = time.perf_counter()
        r = httpx.post(proxy.url + ROUTES["chat"], content=json.dumps(request_body("chat")), timeout=60)
        took = time.perf_counter() - t0
        assert r.status_code == 200
        assert r.content.startswith(b'data: {"pad": "xxx') and r.content.endswith(b"data: [DONE]\n\n")
        assert len(r.content) > 2_000_000
        assert took < 8, took


@pytest.mark.parametrize("api", list(ROUTES))
def test_tools_that_are_no_list_are_sent_as_they_came_and_the_fold_offers_no_recall(api):
    # With --recall the proxy's tool went into "tools": a dict (one tool not in a list) or a
    # string was replaced by a list of the recall tool alone, the client's value gone.
    with RecordingUpstream(json_answer({"ok": True})) as up, \
            ProxyServer(ServeConfig(upstream=up.url, recall=True, **GATED)) as proxy:
        for i, tools in enumerate(({"name": "lookup"}, "lookup")):
            msgs = dialogue()
            msgs[1]["content"] = f"conversation {i} " + msgs[1]["content"]
            r = httpx.post(proxy.url + ROUTES[api], content=json.dumps({**request_body(api, msgs), "tools": tools}))
            assert r.status_code == 200
            assert r.headers["x-contextfold-fold"] == "new"
            assert r.headers["x-contextfold-recall-withheld"] == "tools-not-a-list"
            sent = json.loads(up.seen[-1].raw)
            assert sent["tools"] == tools
            assert "contextfold_recall" not in up.seen[-1].raw.decode()

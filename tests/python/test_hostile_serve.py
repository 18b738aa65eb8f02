"""``contextfold serve`` against hostile and broken clients and upstreams: whatever one request
holds, the proxy answers it (a 4xx in the provider's own error shape, or the request forwarded
unchanged for the provider to judge), never a 500, never a hang, never a corrupted body sent
upstream, and keeps serving the next request. Each test pins a case a fuzz pass over the proxy
found broken (docs/hostile-input.md, "The proxy"); the proxy runs under uvicorn on a loopback
port in front of a loopback upstream, driven by raw httpx or sockets where no SDK could send
the input."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import httpx
from contextfold.serve.config import ServeConfig

from proxy_support import ProxyServer, RecordingUpstream, json_answer
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

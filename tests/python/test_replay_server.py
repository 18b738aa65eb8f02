"""The loopback replay server: replays what was recorded, reports what it did not expect, and
never outlives its test."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from replay_server import Reply, ReplayServer, load_exchanges, recorded


def post(url: str, body: Any, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_replays_a_recorded_exchange_and_records_the_request() -> None:
    reply = recorded("test_openrouter_errors_raised.yaml#0", headers={"retry-after": "3"})
    with ReplayServer(reply) as server:
        status, headers, data = post(server.url + "/api/v1/chat/completions?x=1", {"model": "m"})
    assert status == 429 and headers["retry-after"] == "3"
    assert json.loads(data) == reply.body
    assert server.requests[0].path == "/api/v1/chat/completions?x=1" and server.requests[0].body == {
        "model": "m"
    }
    assert server.errors == []


def test_unexpected_requests_and_wrong_paths_are_reported() -> None:
    with ReplayServer(Reply(body={}, path="/v1/messages")) as server:
        assert post(server.url + "/v1/chat/completions", {})[0] == 418
        assert post(server.url + "/v1/messages", {})[0] == 418  # nothing left queued
    assert len(server.errors) == 2
    assert "expected a request to /v1/messages" in server.errors[0]
    assert "unexpected request" in server.errors[1]


def test_a_pending_delay_ends_with_the_server() -> None:
    start = time.monotonic()
    with ReplayServer(Reply(delay=30.0)) as server:
        with pytest.raises(OSError):  # the client's timeout, well before the delay
            post(server.url + "/v1/chat/completions", {}, timeout=0.2)
    assert time.monotonic() - start < 5.0


def test_revoiced_replies_keep_the_recorded_envelope() -> None:
    plain = recorded("test_anthropic_model_instructions.yaml#0")
    revoiced = recorded("test_anthropic_model_instructions.yaml#0", text="new", finish="max_tokens")
    assert revoiced.body["id"] == plain.body["id"] and revoiced.body["usage"] == plain.body["usage"]
    assert (
        revoiced.body["content"] == [{"type": "text", "text": "new"}]
        and revoiced.body["stop_reason"] == "max_tokens"
    )
    assert plain.body["content"][0]["text"] == "The capital of France is Paris."


def test_every_bundled_exchange_parses_in_its_real_sdk() -> None:
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    genai = pytest.importorskip("google.genai", reason="google-genai not installed")
    import google.genai.errors  # noqa: F401  (genai.errors below)

    for source, ex in load_exchanges().items():
        with ReplayServer(recorded(source)) as server:
            body = ex["request_body"]
            try:
                if ex["api"] == "chat.completions":
                    prefix = ex["path"].rsplit("/chat/completions", 1)[0]
                    client = openai.OpenAI(base_url=server.url + prefix, api_key="test", max_retries=0)
                    out = client.chat.completions.create(model=body["model"], messages=body["messages"])
                    got = out.choices[0].message.content
                elif ex["api"] == "responses":
                    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
                    got = client.responses.create(model=body["model"], input=body["input"]).output_text
                elif ex["api"] == "messages":
                    client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
                    out = client.messages.create(
                        model=body["model"], max_tokens=body["max_tokens"], messages=body["messages"]
                    )
                    got = out.content[0].text
                else:
                    client = genai.Client(
                        api_key="test", http_options={"base_url": server.url, "api_version": "v1beta"}
                    )
                    got = client.models.generate_content(model=ex["model"], contents="hi").text
                assert ex["status"] == 200, source
                assert got or "MAX_TOKENS" in json.dumps(ex["response_body"]), source
            except (openai.APIStatusError, anthropic.APIStatusError, genai.errors.APIError) as exc:
                # the SDK's status error for a recorded non-2xx
                status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
                assert status == ex["status"] != 200, (source, exc)
        assert server.errors == [], (source, server.errors)

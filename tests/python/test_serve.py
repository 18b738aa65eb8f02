"""``contextfold serve`` driven by the real openai and anthropic SDKs (sync, async, streaming),
in front of a loopback upstream that records the raw bytes it receives and answers with recorded
provider responses (tests/data/replay): what it forwards is valid for its API and within the
budget, later turns share the first compaction's folded prefix byte for byte, the fold survives
a restart through a real redis-server, errors come back in the provider's own shape."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import socket
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import anthropic
import contextfold as cf
import httpx
import openai
from contextfold import _core
from contextfold.serve.config import ServeConfig, load_config
from contextfold.serve.fold_cache import Fold, MemoryFoldCache, RedisFoldCache

from proxy_support import LoopbackHandler, ProxyServer, RecordingUpstream, json_answer, loopback
from replay_server import exchange
from transcripts import LOCAL, load_conversations

STREAMS = Path(__file__).parent.parent / "data" / "replay" / "proxy_streams.jsonl"

#: The fake upstream bills this many times the estimate (a provider counting a little more),
#: so calibration has something to learn.
BILLED = 1.1


_OPEN: list[Any] = []


def _sync(cls: Any, *args: Any, **kw: Any) -> Any:
    """A sync client closed when the test ends (its sockets too)."""
    client = cls(*args, **kw)
    _OPEN.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients():
    yield
    while _OPEN:
        _OPEN.pop().close()


def stream_exchange(suffix: str) -> dict[str, Any]:
    rows = [json.loads(line) for line in STREAMS.read_text().splitlines() if line.strip()]
    (row,) = [r for r in rows if r["source"].endswith(suffix)]
    return row


def tau_conversation() -> dict[str, Any]:
    """The longest tau-bench airline conversation (OpenAI chat, tools, GPT-4o)."""
    convs = load_conversations(LOCAL, "tau-bench-airline")
    return max(convs, key=lambda c: (len(c["messages"]), c["source"]))


def chat_answer(reply: dict[str, Any]) -> Any:
    """The recorded chat completion, its usage set to what the upstream would bill for the
    request it received (BILLED x the estimate)."""

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(raw)
        billed = int(BILLED * cf.estimate(body["messages"], tools=body.get("tools"), model=body.get("model")))
        out = json.loads(json.dumps(reply))
        out["usage"]["prompt_tokens"] = billed
        out["usage"]["total_tokens"] = billed + out["usage"]["completion_tokens"]
        return 200, {"content-type": "application/json"}, json.dumps(out).encode()

    return answer


def anthropic_answer(reply: dict[str, Any]) -> Any:
    """The recorded Anthropic message, billed BILLED x the estimate of the request received."""

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(raw)
        billed = int(BILLED * cf.estimate(body["messages"], provider="anthropic", system=body.get("system")))
        out = json.loads(json.dumps(reply))
        out["usage"].update(input_tokens=billed, cache_read_input_tokens=0, cache_creation_input_tokens=0)
        return 200, {"content-type": "application/json"}, json.dumps(out).encode()

    return answer


def turns(messages: list[dict[str, Any]]) -> list[int]:
    """Lengths of the histories a client sends: each time the next message is the model's."""
    return [m for m in range(2, len(messages)) if messages[m]["role"] == "assistant"]


def config(upstream: str, **kw: Any) -> ServeConfig:
    return ServeConfig(upstream=upstream, **kw)


def test_an_agent_loop_through_the_openai_sdk_is_compacted_valid_within_budget_and_folded_the_same_way():
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    full = cf.estimate(msgs, tools=tools, model="gpt-4o")
    trigger, budget = int(full * 0.7), int(full * 0.5)
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    with RecordingUpstream(chat_answer(reply)) as up, \
            ProxyServer(config(up.url, trigger=trigger, budget=budget)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        headers = []
        for m in turns(msgs):
            raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:m], tools=tools)
            assert raw.parse().choices[0].message.content  # the upstream's answer, parsed by the SDK
            headers.append(raw.headers)
        seen = [s for s in up.seen if s.path == "/v1/chat/completions"]
        assert len(seen) == len(turns(msgs))
        strategies = [h["x-contextfold-fold"] for h in headers]
        assert "new" in strategies, strategies
        first = strategies.index("new")
        cache = proxy.proxy.cache
        for s, h in zip(seen, headers):
            sent = s.body["messages"]
            tokens, failures = _core.compaction_verify(sent, _core.PricedRequest(format="chat", tools=tools, model="gpt-4o"))
            assert failures == [], failures  # every call with its result, roles, JSON arguments
            # Within the gate: what was sent, as the upstream billed it, never reaches the trigger
            # once the proxy has learnt the billing (the first turn has no usage yet).
            assert tokens <= trigger
            assert int(h["x-contextfold-tokens-after"]) <= int(h["x-contextfold-tokens-before"])
        # The compacting turn lands at the budget; the turns after it share its folded prefix.
        c = seen[first]
        assert cf.estimate(c.body["messages"], tools=tools, model="gpt-4o") * BILLED <= budget * 1.05
        fold_k = int(headers[first]["x-contextfold-folded-messages"])
        assert 0 < fold_k < len(c.body["messages"]) + fold_k
        later = [s for s, h in zip(seen[first + 1:], headers[first + 1:]) if h["x-contextfold-fold"] == "reused"]
        assert later, "no turn after the compaction reused its fold"
        folds = [cache.get(k) for k in list(cache._folds)]
        prefix_end = c.raw.index(folds[-1].payload) + len(folds[-1].payload) if len(folds) == 1 else None
        shared = c.raw[: prefix_end] if prefix_end else None
        for s in later:
            if shared is not None:
                assert s.raw.startswith(shared)  # byte for byte: the provider's prompt cache hits
            # Only appended since: the client's new messages follow the fold as the client sent them.
            assert s.body["messages"][-1] in msgs
        metrics = httpx.get(proxy.url + "/metrics").text
        assert 'contextfold_compactions_total{api="chat"' in metrics
        assert "contextfold_added_latency_seconds_bucket" in metrics


class _Compressing(httpx.BaseTransport):
    """An httpx transport that sends each request body compressed (``Content-Encoding:
    coding``), as a client that compresses its uploads does; ``sent`` holds the bodies as sent."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.sent: list[bytes] = []
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        packed = gzip.compress(body) if self.coding == "gzip" else zlib.compress(body)
        self.sent.append(packed)
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        headers.append((b"content-encoding", self.coding.encode()))
        return self._inner.handle_request(httpx.Request(request.method, request.url, headers=headers, content=packed))

    def close(self) -> None:
        self._inner.close()


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_request_body_is_read_decoded_and_compacted(coding):
    """A body sent with ``Content-Encoding: gzip`` was never read ("body is not UTF-8") and went
    on over the gate as it came. Read decoded, it is compacted and sent plain, its encoding header
    dropped; one that needs no change goes on as the very bytes the client compressed."""
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    full = cf.estimate(msgs, tools=tools, model="gpt-4o")
    trigger, budget = int(full * 0.7), int(full * 0.5)
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    transport = _Compressing(coding)
    plain_answer = chat_answer(reply)

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        # (The body that needs no change comes as the client compressed it; wbits 47: zlib or gzip.)
        return plain_answer(method, path, raw if raw.startswith(b"{") else zlib.decompress(raw, 47))

    with RecordingUpstream(answer) as up, \
            ProxyServer(config(up.url, trigger=trigger, budget=budget)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0,
                       http_client=httpx.Client(transport=transport))
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs, tools=tools)
        assert raw.parse().choices[0].message.content
        assert raw.headers["x-contextfold-fold"] == "new", raw.headers.get("x-contextfold-not-compacted")
        (seen,) = up.seen
        assert "content-encoding" not in seen.headers  # sent plain, as its headers say
        sent = seen.body["messages"]
        tokens, failures = _core.compaction_verify(sent, _core.PricedRequest(format="chat", tools=tools, model="gpt-4o"))
        assert failures == [] and tokens <= trigger
        small = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:3], tools=tools)
        assert small.headers["x-contextfold-fold"] == "none" and "x-contextfold-not-compacted" not in small.headers
        assert up.seen[-1].raw == transport.sent[-1] and up.seen[-1].headers["content-encoding"] == coding


def _compacting_twice_through_the_proxy(digest: Any = None) -> tuple[list[Any], tuple[Fold, Fold]]:
    """A real airline dialogue sent turn by turn through the proxy by the openai SDK, compacted
    at least twice (``digest``: the proxy's summarizer): its messages and its first and last
    folds."""
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    full = cf.estimate(msgs, tools=tools, model="gpt-4o")
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    with RecordingUpstream(chat_answer(reply)) as up, ProxyServer(config(
            up.url, trigger=int(full * 0.5), budget=int(full * 0.35), strategy="summarize")) as proxy:
        if digest is not None:
            proxy.proxy.folder.summarizer = digest
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        made = [client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:m], tools=tools)
                .headers["x-contextfold-fold"] for m in turns(msgs)]
        assert made.count("new") >= 2, made
        cache = proxy.proxy.cache
        folds = [cache.get(k) for k in list(cache._folds)]
    first, last = folds[0], folds[-1]
    assert first is not None and last is not None
    return msgs, (first, last)


def test_the_proxy_trusts_the_summaries_it_wrote_into_its_folds():
    # A fresh Compactor per request trusted a summary only where an inserted one goes: one
    # merged into a turn was digested as that turn's text. Agent loops with a new Compactor each
    # time over the held-out probe sets: 354 of 608 facts, 370 with the hashes carried.
    _, (first, last) = _compacting_twice_through_the_proxy()
    summary = [m for m in json.loads(b"[" + first.payload + b"]") if _core.SUMMARY_MARKERS[0] in json.dumps(m)]
    assert len(first.summaries) == 1 and len(summary) == 1
    # The next fold carries the first summary's hash beside its own (and those of the folds
    # between: the turn that cut its newest tool output now compacts too).
    assert first.summaries[0] in last.summaries and len(last.summaries) >= 2
    assert Fold.from_bytes(last.to_bytes()) == last
    old = Fold("k", 1, b"{}", 1, 3, "summarize")
    assert Fold.from_bytes(old.to_bytes().replace(b', "summaries": []', b"")).summaries == ()


class _RecordingDigest(cf.ExtractiveSummarizer):
    """The proxy's extractive digest, the messages of each request it summarized kept."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[list[Any]] = []

    def summarize(self, request: Any) -> Any:
        self.read.append(list(request.messages))
        return super().summarize(request)


def test_the_proxy_reads_the_turns_behind_its_summaries_again():
    # A new Compactor per request merged the fold's summary: each compaction digested the last
    # one's digest. The fold keeps the places, in the client's history, of the messages its
    # summary stands for (the client sends them every turn), and the next compaction reads them
    # in the summary's place. Loops through the proxy over the held-out probe sets
    # (tools/loop_report.py --proxy): 417 -> 464 of 608 facts.
    digest = _RecordingDigest()
    msgs, (first, last) = _compacting_twice_through_the_proxy(digest)
    # The first fold's summary stands for client messages, kept as their places.
    (key, tokens, entries), = first.spans
    assert isinstance(key, int) and len(first.summaries) == 1 and tokens > 0
    assert all(isinstance(e, int) and 0 < e < first.k for e in entries)
    assert len(first.sources) == first.count
    # The second compaction read those very messages, not the first summary.
    assert len(digest.read) >= 2
    second = [json.dumps(m, sort_keys=True) for m in digest.read[1]]
    assert all(json.dumps(msgs[e], sort_keys=True) in second for e in entries)
    assert not any(_core.SUMMARY_MARKERS[0] in m for m in second)
    # The last fold stands for all of them: its span holds the first one's places.
    assert any(set(entries) <= {e for e in span if isinstance(e, int)} for _, _, span in last.spans)
    assert Fold.from_bytes(last.to_bytes()) == last


@pytest.mark.parametrize(("api", "shape", "model"), [
    ("chat", "openai", "gpt-4o"), ("responses", "responses", "gpt-4o"),
    ("anthropic", "anthropic", "claude-sonnet-4-5"), ("gemini", "gemini", None)])
def test_in_every_api_the_proxys_next_compaction_reads_the_client_turns_behind_its_summary(api, shape, model):
    # A real SWE run converted to the API's wire format, sent round by round (the whole history
    # each turn) through the proxy's request path; its folds keep places, and every compaction
    # after the first reads the client's own turns where the fold holds a summary.
    from contextfold.serve.apis import API_BY_NAME
    from contextfold.serve.folding import Folder
    from wire_shapes import convert

    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if len(c["messages"]) >= 60)
    src = [dict(m) for m in conv["messages"]]
    system = None
    if shape != "openai" and src[0].get("role") == "system":
        system, src = src[0]["content"], src[1:]
    msgs = convert(src, shape)
    route = API_BY_NAME[api]
    fields: dict[str, Any] = {} if model is None else {"model": model}
    if system is not None:
        fields.update({"responses": {"instructions": system}, "anthropic": {"system": system},
                       "gemini": {"systemInstruction": {"parts": [{"text": system}]}}}[api])
    full = cf.estimate(msgs, provider=route.provider, model=model)
    budget = full // 4
    folder = Folder(ServeConfig(budget=budget, trigger=int(budget * 1.2)), MemoryFoldCache())
    digest = _RecordingDigest()
    folder.summarizer = digest
    compactions = []
    for end in range(4, len(msgs) + 1):
        raw = json.dumps({**fields, route.history_key: msgs[:end]}).encode()
        out = folder.fast(route, raw, model) or folder.slow(route, raw, model)
        if out.compacted:
            compactions.append((end, out.conversation.fold))
    assert len(compactions) >= 2 and len(digest.read) >= 2, (len(compactions), len(digest.read))
    given = {json.dumps(m, sort_keys=True) for m in msgs}
    for read in digest.read[1:]:
        texts = [json.dumps(m, sort_keys=True) for m in read]
        assert not any(_core.SUMMARY_MARKERS[0] in t for t in texts)
        assert sum(t in given for t in texts) >= len(texts) - 1  # (the one other: a turn without the summary)
    spans = [entries for _, fold in compactions for _, _, entries in fold.spans]
    assert spans and all(isinstance(e, (int, dict)) for entries in spans for e in entries)


def test_a_stored_fold_with_malformed_spans_is_read_without_them():
    # (A fold in a shared Redis written by another version, or damaged: the fold is still sent,
    # and the summary whose span is unreadable is merged as before spans were kept.)
    fold = Fold("k", 3, b"{}", 1, 3, "summarize", (1,), ((5, 7, (0, 1, {"role": "user", "content": "x"})),), (0, None))
    assert Fold.from_bytes(fold.to_bytes()) == fold
    bad = fold.to_bytes().replace(b'"spans": [[5, 7,', b'"spans": ["x", [5, true,')
    read = Fold.from_bytes(bad)
    assert read.spans == () and read.sources == (0, None) and read.payload == b"{}" and read.k == 3


def test_the_estimate_is_calibrated_by_the_usage_the_responses_report():
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    with RecordingUpstream(chat_answer(reply)) as up, ProxyServer(config(up.url, context_window=128_000)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        ms = turns(msgs)
        first = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[: ms[0]], tools=tools)
        second = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[: ms[1]], tools=tools)
        raw_first = cf.estimate(msgs[: ms[0]], tools=tools, model="gpt-4o")
        raw_second = cf.estimate(msgs[: ms[1]], tools=tools, model="gpt-4o")
        assert int(first.headers["x-contextfold-tokens-after"]) == raw_first  # nothing learnt yet
        # The first response billed 1.1x the estimate: the second turn is priced that way.
        assert int(second.headers["x-contextfold-tokens-after"]) == pytest.approx(BILLED * raw_second, rel=0.01)
        assert len(up.seen) == 2


def test_a_turn_that_only_appends_is_read_from_where_the_last_body_ended_and_counted_so():
    """A first turn and an edited history are read whole; a turn that appends to the last body
    is read from where it ended: ``contextfold_body_reads_total`` counts each way."""
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    with RecordingUpstream(chat_answer(reply)) as up, ProxyServer(config(up.url, context_window=128_000)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        ms = turns(msgs)[:4]
        for m in ms:
            client.chat.completions.create(model="gpt-4o", messages=msgs[:m], tools=tools)
        edited = [msgs[0], {**msgs[1], "content": msgs[1]["content"] + " (edited)"}, *msgs[2: ms[-1]]]
        client.chat.completions.create(model="gpt-4o", messages=edited, tools=tools)
        metrics = httpx.get(proxy.url + "/metrics").text
    assert len(up.seen) == 5
    assert 'contextfold_body_reads_total{api="chat",read="whole"} 2' in metrics
    assert 'contextfold_body_reads_total{api="chat",read="appended"} 3' in metrics


def test_a_body_under_the_gate_is_forwarded_as_the_very_bytes_the_sdk_sent_with_auth_untouched(caplog):
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")
    caplog.set_level(logging.DEBUG)
    with RecordingUpstream(json_answer(reply["response_body"])) as up, \
            ProxyServer(config(up.url, context_window=128_000)) as proxy:
        direct = _sync(httpx.Client)
        body = json.dumps({"messages": [{"role": "user", "content": "What is the capital of France?"}],
                           "model": "gpt-4o-mini"}, indent=1).encode()
        r = direct.post(proxy.url + "/v1/chat/completions", content=body,
                        headers={"authorization": "Bearer sk-secret-123", "content-type": "application/json",
                                 "openai-organization": "org-x"})
        assert r.status_code == 200
        assert r.json() == reply["response_body"]
        assert up.seen[0].raw == body
        assert up.seen[0].headers["authorization"] == "Bearer sk-secret-123"
        assert up.seen[0].headers["openai-organization"] == "org-x"
        assert r.headers["x-contextfold-strategy"] == "none"
        assert r.headers["x-contextfold-tokens-before"] == r.headers["x-contextfold-tokens-after"]
    assert not any("sk-secret-123" in rec.getMessage() for rec in caplog.records)


@pytest.mark.parametrize("mode", ["sync", "async", "stream", "astream"])
def test_the_openai_sdk_through_the_proxy(mode):
    ex = stream_exchange("test_openai_moderation_stream.yaml#0") if "stream" in mode else \
        exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")
    body = ex["response_body"]
    answer = json_answer(body) if not ex["stream"] else \
        (lambda m, p, r: (200, {"content-type": "text/event-stream"}, body.encode()))
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    with RecordingUpstream(answer) as up, ProxyServer(config(up.url, context_window=128_000)) as proxy:
        base = proxy.url + "/v1"
        if mode == "sync":
            out = _sync(openai.OpenAI, base_url=base, api_key="k", max_retries=0).chat.completions.create(
                model="gpt-4o-mini", messages=messages)
            text = out.choices[0].message.content
        elif mode == "async":
            async def go() -> str | None:
                async with openai.AsyncOpenAI(base_url=base, api_key="k", max_retries=0) as c:
                    out = await c.chat.completions.create(model="gpt-4o-mini", messages=messages)
                    return out.choices[0].message.content
            text = asyncio.run(go())
        elif mode == "stream":
            chunks = _sync(openai.OpenAI, base_url=base, api_key="k", max_retries=0).chat.completions.create(
                model="gpt-4o-mini", messages=messages, stream=True)
            text = "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
        else:
            async def go() -> str:
                async with openai.AsyncOpenAI(base_url=base, api_key="k", max_retries=0) as c:
                    chunks = await c.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
                    return "".join([(x.choices[0].delta.content or "") async for x in chunks if x.choices])
            text = asyncio.run(go())
        expected = body if not ex["stream"] else None
        if expected is not None:
            assert text == expected["choices"][0]["message"]["content"]
        else:
            assert "Paris" in (text or "")
        assert up.seen[0].body["messages"] == messages


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_the_anthropic_sdk_through_the_proxy(mode):
    ex = stream_exchange("test_request_stream_fallback_for_high_max_tokens.yaml#0") if mode == "stream" else \
        exchange("test_anthropic_model_instructions.yaml#0")
    body = ex["response_body"]
    answer = json_answer(body) if not ex["stream"] else \
        (lambda m, p, r: (200, {"content-type": "text/event-stream"}, body.encode()))
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    with RecordingUpstream(answer) as up, ProxyServer(config(up.url, context_window=200_000)) as proxy:
        if mode == "sync":
            out = _sync(anthropic.Anthropic, base_url=proxy.url, api_key="k", max_retries=0).messages.create(
                model="claude-haiku-4-5", max_tokens=100, messages=messages)
            assert out.content[0].text == body["content"][0]["text"]
        elif mode == "async":
            async def go() -> Any:
                async with anthropic.AsyncAnthropic(base_url=proxy.url, api_key="k", max_retries=0) as c:
                    return await c.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=messages)
            assert asyncio.run(go()).content[0].text == body["content"][0]["text"]
        else:
            with _sync(anthropic.Anthropic, base_url=proxy.url, api_key="k", max_retries=0).messages.stream(
                    model="claude-haiku-4-5", max_tokens=100, messages=messages) as s:
                text = "".join(s.text_stream)
            assert text
        sent = up.seen[0].headers
        # The key as this SDK version sends it (x-api-key, or a bearer token), untouched.
        assert sent.get("x-api-key") == "k" or sent.get("authorization") == "Bearer k"
        assert sent["anthropic-version"]
        assert up.seen[0].body["messages"] == messages


def anthropic_shape(conv: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the chat conversation written as Anthropic messages: tool calls as
    tool_use blocks, results as tool_result blocks of the next user turn."""
    system = conv["messages"][0]["content"]
    out: list[dict[str, Any]] = []
    for m in conv["messages"][1:]:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for c in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                               "input": json.loads(c["function"]["arguments"])})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return system, out


def test_an_anthropic_agent_history_is_compacted_into_a_valid_messages_request():
    system, out = anthropic_shape(tau_conversation())
    full = cf.estimate(out, provider="anthropic", system=system)
    reply = exchange("test_anthropic_model_instructions.yaml#0")["response_body"]
    with RecordingUpstream(anthropic_answer(reply)) as up, \
            ProxyServer(config(up.url, trigger=int(full * 0.7), budget=int(full * 0.5))) as proxy:
        client = _sync(anthropic.Anthropic, base_url=proxy.url, api_key="k", max_retries=0)
        folds = []
        for m in range(2, len(out) + 1):
            if out[m - 1]["role"] != "user":
                continue
            r = client.messages.with_raw_response.create(model="claude-haiku-4-5", max_tokens=64, system=system,
                                                         messages=out[:m])
            folds.append(r.headers["x-contextfold-fold"])
        assert "new" in folds
        for s in up.seen:
            sent = s.body["messages"]
            tokens, failures = _core.compaction_verify(sent, _core.PricedRequest(format="anthropic", provider="anthropic", system=system))
            assert failures == [], failures
            assert sent[0]["role"] == "user"
            assert tokens <= int(full * 0.7)


def test_a_body_with_thinking_is_compacted_within_the_budget_as_estimate_request_prices_it():
    system, out = anthropic_shape(tau_conversation())
    thinking = {"type": "enabled", "budget_tokens": 1024}
    full = cf.estimate_request({"model": "claude-haiku-4-5", "system": system, "messages": out,
                                "thinking": thinking}, provider="anthropic")
    budget = int(full * 0.45)
    reply = exchange("test_anthropic_model_instructions.yaml#0")["response_body"]

    def billed_as_estimated(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        # Billed what estimate_request says, so that no calibration moves the budget.
        out = json.loads(json.dumps(reply))
        out["usage"].update(input_tokens=cf.estimate_request(json.loads(raw), provider="anthropic"),
                            cache_read_input_tokens=0, cache_creation_input_tokens=0)
        return 200, {"content-type": "application/json"}, json.dumps(out).encode()

    with RecordingUpstream(billed_as_estimated) as up, \
            ProxyServer(config(up.url, trigger=int(full * 0.7), budget=budget)) as proxy:
        client = _sync(anthropic.Anthropic, base_url=proxy.url, api_key="k", max_retries=0)
        compacted = 0
        for m in range(2, len(out) + 1):
            if out[m - 1]["role"] != "user":
                continue
            r = client.messages.with_raw_response.create(model="claude-haiku-4-5", max_tokens=2048, system=system,
                                                         messages=out[:m], thinking=thinking)
            if r.headers["x-contextfold-fold"] != "new":
                continue
            compacted += 1
            sent = up.seen[-1].body
            assert sent["thinking"] == thinking
            # The settings' tokens (thinking: a system preamble) are the budget's too, and the
            # proxy says the tokens of the very body it sent.
            sent_tokens = cf.estimate_request(sent, provider="anthropic")
            assert int(r.headers["x-contextfold-tokens-after"]) == sent_tokens <= budget
        assert compacted >= 1


def test_an_unreachable_upstream_is_a_502_in_each_providers_own_shape():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed when the block ends: nobody listens
    with ProxyServer(config(dead, context_window=128_000)) as proxy:
        with pytest.raises(openai.APIStatusError) as e:
            _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert e.value.status_code == 502
        assert "unreachable" in e.value.message
        with pytest.raises(anthropic.APIStatusError) as a:
            _sync(anthropic.Anthropic, base_url=proxy.url, api_key="k", max_retries=0).messages.create(
                model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert a.value.status_code == 502
        assert a.value.body["error"]["type"] == "api_error"
        g = httpx.post(proxy.url + "/v1beta/models/gemini-2.5-flash:generateContent",
                       json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert g.status_code == 502 and g.json()["error"]["status"] == "UNAVAILABLE"


def test_a_request_that_cannot_be_compacted_is_forwarded_with_the_reason_or_refused_under_strict():
    # One user message larger than the whole budget: nothing can be folded.
    huge = [{"role": "user", "content": "word " * 4000}]
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    with RecordingUpstream(json_answer(reply)) as up:
        with ProxyServer(config(up.url, trigger=1000, budget=500)) as proxy:
            r = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0) \
                .chat.completions.with_raw_response.create(model="gpt-4o", messages=huge)
            assert r.headers["x-contextfold-not-compacted"]
            assert up.seen[-1].body["messages"] == huge
        n = len(up.seen)
        with ProxyServer(config(up.url, trigger=1000, budget=500, strict=True)) as proxy:
            with pytest.raises(openai.APIStatusError) as e:
                _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
                    model="gpt-4o", messages=huge)
            assert e.value.status_code == 413
            assert len(up.seen) == n  # refused: nothing went upstream


def test_responses_and_gemini_routes_forward_and_price_their_histories():
    resp = exchange("test_openai_responses_system_prompt.yaml#0")["response_body"]
    gem = exchange("test_google/test_google_model.yaml#0")["response_body"]

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        return 200, {"content-type": "application/json"}, json.dumps(resp if "responses" in path else gem).encode()

    with RecordingUpstream(answer) as up, ProxyServer(config(up.url, context_window=128_000)) as proxy:
        out = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0).responses.with_raw_response.create(
            model="gpt-4o", input=[{"role": "user", "content": "hi"}], instructions="be brief")
        assert out.parse().output_text
        assert int(out.headers["x-contextfold-tokens-before"]) == cf.estimate(
            [{"role": "user", "content": "hi"}], system="be brief", model="gpt-4o")
        g = httpx.post(proxy.url + "/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-test",
                       json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert g.status_code == 200 and g.json() == gem
        assert up.seen[-1].path == "/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-test"
        assert int(g.headers["x-contextfold-tokens-before"]) > 0
        # A Responses turn continuing server-side state is forwarded unchanged, saying why.
        out = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0).responses.with_raw_response.create(
            model="gpt-4o", input=[{"role": "user", "content": "more"}], previous_response_id="resp_1")
        assert "held upstream" in out.headers["x-contextfold-not-compacted"]
        assert httpx.get(proxy.url + "/healthz").text == "ok\n"


def test_a_restarted_proxy_finds_the_fold_in_redis_and_sends_the_same_prefix(redis_url):
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    full = cf.estimate(msgs, tools=tools, model="gpt-4o")
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    ms = turns(msgs)
    with RecordingUpstream(json_answer(reply)) as up:
        cfg = ServeConfig(upstream=up.url, trigger=int(full * 0.7), budget=int(full * 0.5), redis=redis_url)
        with ProxyServer(cfg) as proxy:
            client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0)
            for i, m in enumerate(ms):
                r = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:m], tools=tools)
                if r.headers["x-contextfold-fold"] == "new":
                    break
            else:
                pytest.fail("no compaction happened")
            folded = up.seen[-1].raw
        # A new process: nothing in memory, the fold comes from Redis by the content hash.
        with ProxyServer(cfg) as proxy:
            client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0)
            r = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[: ms[i + 1]], tools=tools)
            assert r.headers["x-contextfold-fold"] == "reused"
            again = up.seen[-1].raw
    cache = RedisFoldCache(redis_url)
    try:
        (key,) = cache.client.keys(cache.prefix + "fold:*")
        fold = Fold.from_bytes(cache.client.get(key))
    finally:
        cache.close()
    assert fold.k == int(r.headers["x-contextfold-folded-messages"])
    shared = folded[: folded.index(fold.payload) + len(fold.payload)]
    assert again.startswith(shared)  # byte for byte, across the restart


def test_config_reads_flags_over_environment_over_toml(tmp_path):
    toml = tmp_path / "cf.toml"
    toml.write_text('upstream = "http://file"\nport = 9000\n[upstreams]\nanthropic = "http://a"\n'
                    '[compaction]\nbudget = 5000\nstrategy = "mask"\n')
    cfg = load_config({"port": 9100}, config_file=toml, environ={"CONTEXTFOLD_UPSTREAM": "http://env",
                                                                   "CONTEXTFOLD_STRICT": "1"})
    assert (cfg.upstream, cfg.port, cfg.budget, cfg.strategy, cfg.strict) == ("http://env", 9100, 5000, "mask", True)
    assert cfg.upstream_for("anthropic") == "http://a" and cfg.upstream_for("chat") == "http://env"
    toml.write_text("[compaction]\nbudgett = 1\n")
    with pytest.raises(ValueError, match="budgett"):
        load_config(config_file=toml, environ={})
    with pytest.raises(ValueError, match="strategy"):
        load_config({"strategy": "fold"}, environ={})
    assert MemoryFoldCache().sizes("x") == []


@pytest.mark.parametrize("stream", [False, True])
def test_the_google_genai_sdk_through_the_proxy(stream):
    genai = pytest.importorskip("google.genai", reason="google-genai not installed")
    from google.genai import types

    ex = stream_exchange("test_google_model_stream.yaml#0") if stream else exchange("test_google/test_google_model.yaml#0")
    body = ex["response_body"]
    answer = (lambda m, p, r: (200, {"content-type": "text/event-stream"}, body.encode())) if stream else json_answer(body)
    with RecordingUpstream(answer) as up, ProxyServer(config(up.url, context_window=1_000_000)) as proxy:
        client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=proxy.url, api_version="v1beta"))
        if stream:
            text = "".join(c.text or "" for c in client.models.generate_content_stream(
                model="gemini-2.0-flash-exp", contents="What is the capital of France?"))
            assert "Paris" in text
        else:
            out = client.models.generate_content(model="gemini-2.5-flash", contents="What is the capital of France?")
            assert out.text == body["candidates"][0]["content"]["parts"][-1]["text"]
        client.close()
        sent = up.seen[0]
        assert sent.path.split("?")[0].endswith(":streamGenerateContent" if stream else ":generateContent")
        assert sent.headers.get("x-goog-api-key") == "AIza-test" or "key=AIza-test" in sent.path
        assert sent.body["contents"][0]["parts"][0]["text"] == "What is the capital of France?"


def test_a_stream_passes_through_unbuffered():
    """The upstream sends the first event and waits until the client has it before sending the
    rest: a proxy that buffered the stream would leave the client with nothing until the end."""
    got_first = threading.Event()
    waited: list[bool] = []
    events = stream_exchange("test_openai_moderation_stream.yaml#0")["response_body"].split("\n\n")

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.start_chunked()
            self.chunk((events[0] + "\n\n").encode())
            waited.append(got_first.wait(10))
            self.chunk(("\n\n".join(events[1:])).encode())
            self.end_chunked()

    with loopback(Handler) as url, ProxyServer(config(url, context_window=128_000)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        chunks = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                                stream=True)
        first = next(iter(chunks))
        got_first.set()  # only reachable if the first event arrived while the upstream waited
        rest = "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
    assert first.choices[0].delta.role == "assistant"
    assert waited == [True]
    assert "Paris" in rest


def test_an_ndjson_stream_passes_through_unbuffered():
    """Ollama's own /api/chat streams NDJSON lines, not SSE. The upstream sends the first line and
    waits until the client has it before sending the rest: the proxy held any body that is not
    SSE whole, and every line reached the client at once at the end."""
    ollama = pytest.importorskip("ollama")
    got_first = threading.Event()
    waited: list[bool] = []
    words = ["The", " capital", " is", " Paris."]

    def line(content: str, done: bool) -> bytes:
        out: dict[str, Any] = {"model": "llama3.2", "created_at": "2025-01-01T00:00:00Z",
                               "message": {"role": "assistant", "content": content}, "done": done}
        if done:
            out.update(done_reason="stop", total_duration=1, prompt_eval_count=9, eval_count=4)
        return json.dumps(out).encode() + b"\n"

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.start_chunked("application/x-ndjson")
            self.chunk(line(words[0], False))
            waited.append(got_first.wait(10))
            for w in words[1:]:
                self.chunk(line(w, False))
            self.chunk(line("", True))
            self.end_chunked()

    with loopback(Handler) as url, ProxyServer(config(url, context_window=128_000)) as proxy:
        client = _sync(ollama.Client, host=proxy.url)
        chunks = iter(client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}], stream=True))
        first = next(chunks)
        got_first.set()  # only reachable if the first line arrived while the upstream waited
        rest = list(chunks)
    assert waited == [True]
    assert first.message.content + "".join(c.message.content for c in rest) == "".join(words)
    assert rest[-1].done and rest[-1].done_reason == "stop"


def test_repeated_response_headers_reach_the_client():
    """An upstream's repeated headers (OpenAI answers with two Set-Cookie) reach the client each
    as often as it came, on a compacted route read whole, on a stream, and on a path the proxy
    only forwards: the proxy kept the last of them alone."""
    reply = json.dumps(exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]).encode()
    events = stream_exchange("test_openai_moderation_stream.yaml#0")["response_body"].encode()
    cookies = ["__cf_bm=abc; path=/; HttpOnly", "_cfuvid=def; path=/; HttpOnly"]

    class Handler(LoopbackHandler):
        def _answer(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            stream = bool(raw) and json.loads(raw).get("stream") is True
            body = events if stream else reply if self.command == "POST" else b'{"object": "list", "data": []}'
            self.send_response(200)
            self.send_header("content-type", "text/event-stream" if stream else "application/json")
            for cookie in cookies:
                self.send_header("set-cookie", cookie)
            self.send_header("x-multi", "one")
            self.send_header("x-multi", "two")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    with loopback(Handler) as url, ProxyServer(config(url, context_window=128_000)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        hi = [{"role": "user", "content": "hi"}]
        plain = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=hi)
        streamed = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=hi, stream=True)
        listed = client.models.with_raw_response.list()
        assert plain.parse().choices[0].message.content
        assert "Paris" in "".join((c.choices[0].delta.content or "") for c in streamed.parse() if c.choices)
        assert listed.parse().data == []
        for raw in (plain, streamed, listed):
            assert raw.headers.get_list("set-cookie") == cookies
            assert raw.headers.get_list("x-multi") == ["one", "two"]
            assert raw.headers.get_list("x-contextfold-fold") == ["none"]  # the proxy's own, once
            # The upstream's Date and Server, once each: uvicorn's own were sent beside them, and
            # httpx joined the two dates into one value.
            assert len(raw.headers.get_list("date")) == 1 and len(raw.headers.get_list("server")) == 1
            assert "BaseHTTP" in raw.headers["server"]
        # A response the proxy writes itself still carries a Date.
        health = httpx.get(proxy.url + "/healthz")
        assert len(health.headers.get_list("date")) == 1 and "server" not in health.headers


def test_the_serve_command_refuses_bad_options_with_exit_code_2(capsys, monkeypatch):
    from contextfold.cli import main

    monkeypatch.delenv("CONTEXTFOLD_UPSTREAM", raising=False)
    assert main(["serve"]) == 2
    assert "no upstream" in capsys.readouterr().err
    assert main(["serve", "--upstream", "http://127.0.0.1:9", "--strategy", "bogus"]) == 2
    assert "unknown strategy" in capsys.readouterr().err
    assert main(["serve", "--upstream", "nope=http://127.0.0.1:9"]) == 2
    assert "unknown API" in capsys.readouterr().err


def test_an_llm_summarizer_named_by_provider_and_model_writes_the_proxys_summaries(monkeypatch):
    conv = tau_conversation()
    msgs, tools = conv["messages"], conv["tools"]
    full = cf.estimate(msgs, tools=tools, model="gpt-4o")
    summary = "\n".join(f"## {name}\n- noted about {name.lower()}" for name in cf.summarize.SECTIONS)
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    agent_answer = chat_answer(reply)

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        if json.loads(raw).get("model") == "gpt-4o-mini":  # the summarizer's call
            out = json.loads(json.dumps(reply))
            out["choices"][0]["message"]["content"] = summary
            return 200, {"content-type": "application/json"}, json.dumps(out).encode()
        return agent_answer(method, path, raw)

    with RecordingUpstream(answer) as up:
        monkeypatch.setenv("OPENAI_BASE_URL", up.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-summarizer")
        cfg = config(up.url, trigger=int(full * 0.7), budget=int(full * 0.5), strategy="summarize",
                     summarizer="openai:gpt-4o-mini")
        with ProxyServer(cfg) as proxy:
            client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-agent", max_retries=0)
            folds = [client.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs[:m], tools=tools)
                     .headers["x-contextfold-fold"] for m in turns(msgs)]
    assert "new" in folds
    calls = [s for s in up.seen if s.body.get("model") == "gpt-4o-mini"]
    assert len(calls) == folds.count("new")  # one summary per compaction, none on reused turns
    assert calls[0].headers["authorization"] == "Bearer sk-summarizer"  # its own key, not the agent's
    folded = [s for s in up.seen if s.body.get("model") == "gpt-4o" and "## Goal" in json.dumps(s.body)]
    assert folded, "the model's summary did not reach the forwarded requests"
    with pytest.raises(ValueError, match="summarizer"):
        ServeConfig(upstream="http://x", summarizer="nope:model")


@pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")
def test_only_anthropics_own_paths_go_to_the_anthropic_upstream_and_openai_thread_messages_to_the_default():
    # A thread message as the Assistants API returns it (platform.openai.com/docs/api-reference/messages/object).
    thread_message = {"id": "msg_abc", "object": "thread.message", "created_at": 1, "assistant_id": None,
                      "thread_id": "thread_abc", "run_id": None, "role": "user", "attachments": [], "metadata": {},
                      "status": "completed", "incomplete_details": None, "completed_at": None, "incomplete_at": None,
                      "content": [{"type": "text", "text": {"value": "hi", "annotations": []}}]}
    reply = exchange("test_anthropic_model_instructions.yaml#0")["response_body"]

    def anthropic_api(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        out = {"input_tokens": 12} if path.endswith("/count_tokens") else reply
        return 200, {"content-type": "application/json"}, json.dumps(out).encode()

    with RecordingUpstream(json_answer(thread_message)) as oa, RecordingUpstream(anthropic_api) as an, \
            ProxyServer(ServeConfig(upstream=oa.url, upstreams={"anthropic": an.url}, context_window=128_000)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="sk-openai", max_retries=0)
        msg = client.beta.threads.messages.create("thread_abc", role="user", content="hi")
        assert msg.id == "msg_abc"
        assert [s.path for s in oa.seen] == ["/v1/threads/thread_abc/messages"]
        assert oa.seen[0].headers["authorization"] == "Bearer sk-openai"
        assert oa.seen[0].body == {"role": "user", "content": "hi"}
        assert an.seen == []  # the OpenAI key never reaches the Anthropic upstream
        claude = _sync(anthropic.Anthropic, base_url=proxy.url, api_key="sk-ant", max_retries=0)
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        claude.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=messages)
        assert claude.messages.count_tokens(model="claude-haiku-4-5", messages=messages).input_tokens == 12
        assert [s.path for s in an.seen] == ["/v1/messages", "/v1/messages/count_tokens"]
        assert len(oa.seen) == 1


#: The proxy's upstream timeout (seconds, connect and each read) where the upstream stalls: at
#: 0.5 s a loaded 2-core CI machine once took longer to accept the loopback connection
#: (ConnectTimeout where the stall's ReadTimeout was asserted).
STALL_TIMEOUT = 2.0


@contextlib.contextmanager
def stalling_upstream(content_type: str, first: bytes, length: int | None = None) -> Iterator[str]:
    """The URL of a loopback upstream that sends its status line, headers and the first part of
    its body, then stalls (until the block ends) with the rest never sent: a provider hanging
    mid-response. ``length``: the content-length it announces (None: chunked)."""
    release = threading.Event()

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            if length is None:
                self.start_chunked(content_type)
                self.chunk(first)
            else:
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(length))
                self.end_headers()
                self.wfile.write(first)
                self.wfile.flush()
            release.wait(30)

    with loopback(Handler) as url:
        try:
            yield url
        finally:
            release.set()


def _upstream_errors(proxy: ProxyServer) -> int:
    (line,) = [x for x in httpx.get(proxy.url + "/metrics").text.splitlines()
               if x.startswith("contextfold_upstream_errors_total ")]
    return int(line.split()[1])


def test_a_response_that_stalls_after_its_headers_is_a_502_in_the_apis_shape_and_counted():
    reply = json.dumps(exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]).encode()
    with stalling_upstream("application/json", reply[:10], length=len(reply)) as url, \
            ProxyServer(config(url, context_window=128_000, timeout=STALL_TIMEOUT)) as proxy:
        with pytest.raises(openai.APIStatusError) as e:
            _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert e.value.status_code == 502
        assert "broke off its response: ReadTimeout" in e.value.message
        assert e.value.response.headers["x-contextfold-fold"] == "none"
        assert _upstream_errors(proxy) == 1


def test_a_stream_that_stalls_midway_ends_cleanly_with_an_error_event_each_sdk_raises():
    events = stream_exchange("test_openai_moderation_stream.yaml#0")["response_body"].split("\n\n")
    # Two whole events, then half of the third: the half is never passed on.
    sent = ("\n\n".join(events[:2]) + "\n\n" + events[2][: len(events[2]) // 2]).encode()
    with stalling_upstream("text/event-stream", sent) as url, \
            ProxyServer(config(url, context_window=128_000, timeout=STALL_TIMEOUT)) as proxy:
        client = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        chunks = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                                stream=True)
        got = 0
        with pytest.raises(openai.APIError, match="broke off its stream: ReadTimeout"):
            for _ in chunks:
                got += 1
        assert got == 2  # the whole events came through; the half one did not
        # The HTTP body itself ended properly: read raw, it is the two events and the error event.
        raw = httpx.post(proxy.url + "/v1/chat/completions", json={"model": "gpt-4o", "stream": True,
                                                                   "messages": [{"role": "user", "content": "hi"}]})
        body = raw.text.split("\n\n")
        assert body[:2] == events[:2] and json.loads(body[2].removeprefix("data: "))["error"]["code"] == "bad_gateway"
        assert _upstream_errors(proxy) == 2

    anthropic_events = stream_exchange("test_request_stream_fallback_for_high_max_tokens.yaml#0")["response_body"]
    first_two = "\n\n".join(anthropic_events.split("\n\n")[:2]) + "\n\n"
    with stalling_upstream("text/event-stream", first_two.encode()) as url, \
            ProxyServer(config(url, context_window=200_000, timeout=STALL_TIMEOUT)) as proxy:
        claude = _sync(anthropic.Anthropic, base_url=proxy.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError, match="broke off its stream"), \
                claude.messages.stream(model="claude-haiku-4-5", max_tokens=100,
                                       messages=[{"role": "user", "content": "hi"}]) as s:
            "".join(s.text_stream)
        assert _upstream_errors(proxy) == 1


@pytest.mark.parametrize(("args", "env", "toml", "says"), [
    (["--port", "99999"], {}, None, "port must be an int from 1 to 65535, got 99999"),
    (["--port", "0"], {}, None, "port must be"),
    (["--trigger", "-5"], {}, None, "trigger must be"),
    # (Neither tokens nor a share: cut to an int it was a 1-token trigger, and nothing compacted.)
    (["--trigger", "1.5"], {}, None, "trigger must be tokens (an int >= 1) or a share of the window"),
    (["--timeout", "-1"], {}, None, "timeout must be a positive number"),
    (["--timeout", "0"], {}, None, "timeout must be a positive number"),
    (["--workers", "0"], {}, None, "workers must be"),
    ([], {"CONTEXTFOLD_TIMEOUT": "-2"}, None, "CONTEXTFOLD_TIMEOUT='-2': timeout must be"),
    ([], {"CONTEXTFOLD_TRIGGER": "0"}, None, "CONTEXTFOLD_TRIGGER='0': trigger must be"),
    ([], {}, 'port = "abc"\n', "cf.toml: port must be an int from 1 to 65535, got 'abc'"),
    ([], {}, "[compaction]\ntrigger = -0.5\n", "cf.toml: trigger must be"),
    ([], {}, "timeout = true\n", "cf.toml: timeout must be"),
    ([], {}, "upstream = \n", "cf.toml: Invalid value"),
], ids=["port-over-65535", "port-0", "negative-trigger", "fractional-token-trigger", "negative-timeout", "zero-timeout", "zero-workers",
        "env-negative-timeout", "env-zero-trigger", "toml-port-string", "toml-negative-share", "toml-timeout-bool",
        "toml-syntax-error"])
def test_serve_refuses_an_out_of_range_or_mistyped_option_with_exit_2_and_one_line_naming_it_and_its_source(
        args, env, toml, says, capsys, monkeypatch, tmp_path):
    from contextfold.cli import main
    from contextfold.serve import app as serve_app

    def started(*a: Any, **kw: Any) -> None:  # a bad option let through would serve forever
        raise AssertionError("the proxy started")

    monkeypatch.setattr(serve_app, "run", started)
    for var in ("CONTEXTFOLD_PORT", "CONTEXTFOLD_TIMEOUT", "CONTEXTFOLD_TRIGGER", "CONTEXTFOLD_WORKERS"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    if toml is not None:
        (tmp_path / "cf.toml").write_text(toml)
        args = [*args, "--config", str(tmp_path / "cf.toml")]
    assert main(["serve", "--upstream", "http://127.0.0.1:9", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert says in err


def test_a_replica_finds_a_conversation_s_fold_while_others_with_its_system_prompt_folded_since():
    # Chat apps send one system prompt in every conversation. The fold index was keyed by the
    # first message alone, so the folds of the other conversations pushed this one's out of the
    # index (four deep: 16, 17, 14, 13 where this one's was 11) and a replica that had not seen
    # it folded it anew. The index is now keyed through the first user turn.
    from contextfold.serve.apis import API_BY_NAME
    from contextfold.serve.folding import Folder

    route = API_BY_NAME["chat"]
    convs = [c for c in load_conversations(LOCAL, "tau-bench-airline")
             if cf.estimate(c["messages"], tools=c["tools"], model="gpt-4o") > 5_000]
    assert len(convs) >= 12 and len({json.dumps(c["messages"][0]) for c in convs}) == 1  # one system prompt
    cache = MemoryFoldCache()
    config = ServeConfig(budget=3_800, trigger=4_200)

    def fold_of(folder: Folder, conv: dict[str, Any], upto: int | None = None) -> tuple[Any, int]:
        """Feeds ``conv`` turn by turn through ``folder`` up to its first compaction (or to
        ``upto`` messages): the last outcome and where it stopped."""
        msgs = conv["messages"]
        for end in (upto,) if upto else turns(msgs):
            raw = json.dumps({"model": "gpt-4o", "messages": msgs[:end], "tools": conv["tools"]}).encode()
            out = folder.fast(route, raw, "gpt-4o") or folder.slow(route, raw, "gpt-4o")
            if upto or out.compacted:
                return out, end
        pytest.fail("no compaction")

    first = Folder(config, cache)
    made, at = fold_of(first, convs[0])
    for other in convs[1:]:
        fold_of(first, other)
    later = [m for m in turns(convs[0]["messages"]) if m > at]
    replica = Folder(config, cache)  # never saw the conversation; shares the cache
    out, _ = fold_of(replica, convs[0], upto=later[0])
    assert not out.compacted and out.fold == "reused", (out.fold, out.reason)
    assert out.conversation.fold.key == made.conversation.fold.key


def test_a_history_the_client_broke_is_forwarded_saying_what_is_wrong_not_the_librarys_advice():
    """A kept call whose arguments are cut off (not valid JSON): the proxy forwards the body as
    the client sent it, and its reason names the message and the fault; it said "Compact with
    repair=True", an option no proxy user has."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]
    for k in range(8):
        args = '{"path": "f.py"' if k == 7 else json.dumps({"path": f"f{k}.py"})
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": args}}]},
                 {"role": "tool", "tool_call_id": f"c{k}", "content": f"line {k}\n" * 300}]
    full = cf.estimate(msgs, model="gpt-4o")
    reply = exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]
    with RecordingUpstream(chat_answer(reply)) as up, \
            ProxyServer(config(up.url, trigger=int(full * 0.6), budget=int(full * 0.4))) as proxy:
        r = _sync(openai.OpenAI, base_url=proxy.url + "/v1", api_key="k", max_retries=0) \
            .chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
    why = r.headers["x-contextfold-not-compacted"]
    assert why.startswith("InvalidArgumentsError: message 15:") and '"c7"' in why, why
    assert "repair=True" not in why and why.endswith("forwarded as the client sent it"), why
    assert up.seen[-1].body["messages"] == msgs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_serve_command_keeps_a_query_key_out_of_its_log_and_exits_0_on_sigterm():
    import os
    import signal
    import subprocess
    import sys
    import time

    port = _free_port()
    # The upstream refuses connections: the request is answered 502, and logged all the same.
    proc = subprocess.Popen([sys.executable, "-m", "contextfold", "serve", "--upstream", "http://127.0.0.1:9",
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CONTEXTFOLD_UPSTREAM": ""})
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.1)
        secret = "AIzaSyNOT-A-REAL-KEY-0001"
        r = httpx.post(f"{base}/v1beta/models/gemini-2.0-flash:generateContent?alt=sse&key={secret}",
                       json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, timeout=30)
        assert r.status_code == 502
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    # uvicorn writes its access log to stdout, the rest to stderr.
    assert "generateContent?alt=sse&key=REDACTED" in out
    assert secret not in out + err


def test_a_query_credential_is_redacted_and_every_other_parameter_kept():
    from contextfold.serve.access_log import redact_query

    assert redact_query("/v1beta/models/m:generateContent?key=abc&alt=sse") == (
        "/v1beta/models/m:generateContent?key=REDACTED&alt=sse")
    assert redact_query("/x?api-version=2024-10-21&API_KEY=s&sig=t&keys=1") == (
        "/x?api-version=2024-10-21&API_KEY=REDACTED&sig=REDACTED&keys=1")
    assert redact_query("/v1/models") == "/v1/models"
    assert redact_query("/a?key") == "/a?key"

"""Hostile LLM servers against the real openai and anthropic SDK clients on a loopback server:
a reply dripped one byte every 1.5 s, a huge body, a gzip bomb, and sync clients whose calls are
cancelled under ``compact_async`` (the loop's default executor must stay free)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import contextfold as cf
from contextfold.summarize import LLMSummarizer, SummaryRequest
from replay_server import Reply, ReplayServer, recorded

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

CHAT_OK = "test_max_completion_tokens[gpt-4o-mini].yaml#0"
ANTHROPIC_OK = "test_anthropic_model_instructions.yaml#0"
MIDDLE = [
    {"role": "user", "content": "Fix the failing date parser in src/dates.py."},
    {"role": "assistant", "content": "Looking at it.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "run_tests", "arguments": '{"path": "tests"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "FAILED tests/test_dates.py: ValueError"},
]


def _client(kind: str, url: str, is_async: bool) -> Any:
    if kind == "openai":
        return (openai.AsyncOpenAI if is_async else openai.OpenAI)(base_url=url + "/v1", api_key="test")
    return (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(base_url=url, api_key="test")


def _ok(kind: str) -> Reply:
    return recorded(CHAT_OK if kind == "openai" else ANTHROPIC_OK)


def _summarize(kind: str, mode: str, summarizer: LLMSummarizer) -> cf.SummaryResult:
    req = SummaryRequest(MIDDLE, "openai", model="gpt-4o")
    if mode == "sync":
        return summarizer.summarize(req)
    return asyncio.run(summarizer.asummarize(req))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_timeout_bounds_a_reply_dripped_one_byte_every_1_5_s(kind, mode):
    ok = _ok(kind)
    drip = Reply(status=ok.status, body=ok.body, headers=ok.headers, path=ok.path, drip=1.5)
    with ReplayServer(drip) as server:
        s = LLMSummarizer(_client(kind, server.url, mode == "async"), "gpt-4o-mini", max_retries=0, timeout=2.0,
                          context_window=128_000)
        start = time.monotonic()
        r = _summarize(kind, mode, s)
        took = time.monotonic() - start
    assert r.fallback_used and r.error
    assert "time" in r.error.lower()
    # 2 s of limit, plus at most one byte's gap before the reader sees the deadline.
    assert took < 2.0 + 1.5 + 1.0, took


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_timeout_covers_retries_and_the_waits_between_them(kind):
    slow = Reply(delay=0.8)
    with ReplayServer(slow, slow, slow, slow, max_requests=8) as server:
        s = LLMSummarizer(_client(kind, server.url, False), "gpt-4o-mini", max_retries=10, backoff=0.3, timeout=2.0,
                          attempt_timeout=0.5, context_window=128_000)
        start = time.monotonic()
        r = s.summarize(SummaryRequest(MIDDLE, "openai", model="gpt-4o"))
        took = time.monotonic() - start
        server.queue(*[slow] * 8)  # what a client without a total limit would have gone on asking
    assert r.fallback_used and took < 3.0, took
    assert len(server.requests) < 5


# -- item 3: what is read of a reply is capped ----------------------------------------------------

_MEASURE = r"""
import json, resource, sys, time, zlib
sys.path.insert(0, sys.argv[1])
from replay_server import Reply, ReplayServer
import openai, anthropic
from contextfold.summarize import LLMSummarizer, SummaryRequest
kind, what = sys.argv[2], sys.argv[3]
MB = 1 << 20
if what == "gzip":
    # ~400 KB on the wire, ~400 MB once decoded: made in pieces, never held decoded.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [z.compress(b'{"choices": [{"message": {"content": "')]
    block = b" " * MB
    parts += [z.compress(block) for _ in range(400)]
    parts.append(z.flush())
    body = b"".join(parts)
    reply = Reply(body=body, headers={"content-encoding": "gzip"})
else:
    n = 400
    def pieces():
        yield b'{"choices": [{"message": {"content": "'
        chunk = b"x" * MB
        for _ in range(n):
            yield chunk
    reply = Reply(stream=(len(b'{"choices": [{"message": {"content": "') + n * MB, pieces()))
with ReplayServer(reply) as server:
    if kind == "openai":
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="test")
    else:
        client = anthropic.Anthropic(base_url=server.url, api_key="test")
    s = LLMSummarizer(client, "gpt-4o-mini", max_retries=0, timeout=60, context_window=128_000)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = s.summarize(SummaryRequest([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], "openai"))
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
print(json.dumps({"fallback": r.fallback_used, "error": r.error, "grown_kib": grown, "wire": len(body) if what == "gzip" else None}))
"""


@pytest.mark.parametrize("what", ["gzip", "plain"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_huge_or_gzip_bomb_reply_is_cut_at_the_cap_and_falls_back(kind, what):
    r = subprocess.run([sys.executable, "-c", _MEASURE, str(Path(__file__).parent.parent / "support"), kind, what],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["fallback"] and "larger than" in out["error"], out
    # Reading 400 MB whole takes >= 400 MB (the report measured ~1 GB); the cap is 4 MiB and
    # httpx decodes at most one network read at a time.
    assert out["grown_kib"] < 150_000, out
    if what == "gzip":
        assert out["wire"] < 1_000_000


# -- item 2: sync clients under compact_async ----------------------------------------------------------


def _history() -> list[dict]:
    h = [{"role": "user", "content": "task " * 50}]
    for k in range(12):
        h.append({"role": "assistant", "content": f"step {k} " * 40})
        h.append({"role": "user", "content": f"observation {k} " * 200})
    return h


def test_cancelled_sync_calls_under_compact_async_leave_the_default_executor_free():
    async def main(url: str) -> float:
        client = openai.OpenAI(base_url=url + "/v1", api_key="test")
        s = LLMSummarizer(client, "gpt-4o-mini", max_retries=0, timeout=3.0, context_window=128_000)
        c = cf.Compactor(budget=1500, strategy="summarize", summarizer=s)
        tasks = [asyncio.create_task(c.compact_async(_history())) for _ in range(8)]
        await asyncio.sleep(0.5)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # The loop's default executor (min(32, cpus + 4) threads) must not be held by them.
        start = time.monotonic()
        await asyncio.wait_for(asyncio.to_thread(lambda: 1), timeout=2.0)
        return time.monotonic() - start

    slow = Reply(delay=30.0)
    with ReplayServer(*[slow] * 8, max_requests=16) as server:
        free_after = asyncio.run(main(server.url))
        server.queue(*[slow] * 8)
    assert free_after < 1.0


def test_sync_summarizer_calls_run_on_a_bounded_pool_of_contextfold_s_own():
    import threading

    from contextfold.summarize.bounded import MAX_WORKERS

    seen: set[str] = set()

    class Sync:
        def summarize(self, request):
            seen.add(threading.current_thread().name)
            return "summary of the middle"

    async def main() -> None:
        c = cf.Compactor(budget=1500, strategy="summarize", summarizer=Sync())
        await asyncio.gather(*(c.compact_async(_history()) for _ in range(3)))

    asyncio.run(main())
    assert seen and all(n.startswith("contextfold-summarize") for n in seen)
    assert MAX_WORKERS >= 1


# -- a reply cut mid-emoji ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_model_reply_with_a_lone_surrogate_compacts_with_u_fffd_in_its_place(kind, mode):
    # The reply's JSON holds "\ud83d" (half of an emoji's pair, as a server that cut its text
    # mid-pair sends it): the SDK decodes it to a lone surrogate, which the core cannot read as
    # UTF-8 (was: a bare UnicodeEncodeError out of compact / compact_async).
    from test_llm_summarizer import TEMPLATE

    reply = recorded(CHAT_OK if kind == "openai" else ANTHROPIC_OK, text=TEMPLATE + "\nDone \ud83d")
    h = _history()
    before = json.dumps(h)
    with ReplayServer(reply) as server:
        s = LLMSummarizer(_client(kind, server.url, mode == "async"), "gpt-4o-mini", max_retries=0, timeout=10.0,
                          context_window=128_000)
        c = cf.Compactor(budget=1500, strategy="summarize", summarizer=s)
        r = c.compact(h) if mode == "sync" else asyncio.run(c.compact_async(h))
    assert json.dumps(h) == before
    assert r.strategy_used == "summarize" and not r.fallback_used
    assert "Done \ufffd" in r.summary
    json.dumps(r.messages, ensure_ascii=False).encode("utf-8")


# -- a model that writes the library's index heading mid-summary -----------------------------------------


def test_an_index_heading_the_model_writes_mid_summary_cuts_nothing_from_the_next_prompt():
    # The model copies "## Identifier index" (seen in a recalled fold, say) before its last
    # sections. Taken for the summary's index, it kept the real index from being appended, and
    # the next compaction showed the model the previous summary cut there: without its open
    # tasks, next step and the user's requests.
    from test_llm_summarizer import TEMPLATE

    from contextfold.summary_room import index_at

    fake = TEMPLATE.replace("## Open tasks", "## Identifier index\n- src/dates.py\n\n## Open tasks")

    def turns(first: int, n: int) -> list[dict]:
        h: list[dict] = []
        for t in range(first, first + n):
            h.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{t}", "type": "function",
                      "function": {"name": "run", "arguments": json.dumps({"path": f"src/mod_{t}.py"})}}]})
            h += [{"role": "tool", "tool_call_id": f"call_{t}", "content": f"output {t} " * 150},
                  {"role": "assistant", "content": f"step {t} done"}, {"role": "user", "content": f"go on {t}"}]
        return h

    with ReplayServer(recorded(CHAT_OK, text=fake), recorded(CHAT_OK, text=TEMPLATE)) as server:
        s = LLMSummarizer(_client("openai", server.url, False), "gpt-4o-mini", max_retries=0, timeout=10.0,
                          context_window=128_000)
        c = cf.Compactor(budget=2500, strategy="summarize", summarizer=s)
        first = c.compact([{"role": "user", "content": "task: fix src/dates.py " * 20}, *turns(0, 12)])
        assert index_at(first.summary) > first.summary.index("## Next step")  # the real index, last
        c.compact(first.messages + turns(12, 12))
        prompt = server.requests[1].body["messages"][-1]["content"]
    previous = prompt.split("<previous_summary>")[1].split("</previous_summary>")[0]
    for kept in ("## Open tasks", "Run the whole suite.", "## Next step", "## User requests"):
        assert kept in previous, kept


def test_a_lone_surrogate_in_a_summary_request_s_model_is_read_as_u_fffd() -> None:
    # It raised a UnicodeEncodeError that named no field, out of the digest.
    request = cf.SummaryRequest(messages=[{"role": "user", "content": "Fix the parser."}], provider="openai",
                                model="gpt-4o \ud800", max_tokens=100)
    assert request.model == "gpt-4o \ufffd"
    assert "Fix the parser." in cf.ExtractiveSummarizer().summarize(request).text

"""LLMSummarizer through the REAL SDK clients against a loopback server replaying recorded
provider responses (tests/data/replay; synthesised faults are named as such below).

Every failure mode (timeout, 429 with and without retry-after, 5xx / 529, 4xx, dropped
connection, malformed JSON, empty output, output without the template, output cut at the cap)
is driven through every adapter, sync and async, and must end in the fallback's summary with
``fallback_used=True`` and an ``error`` that says what happened: the middle is never dropped.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import contextfold
from contextfold import LLMSummarizer, SummaryRequest, SummaryResult
from contextfold.cost import prices_for
from contextfold.summarize.llm import _SECTION_HINTS, SECTIONS
from replay_server import Reply, ReplayServer, exchange, recorded

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

# A summary in the template, with identifiers from the middle below.
TEMPLATE = "\n".join(
    [
        "## Goal",
        "Fix the failing date parser in src/dates.py.",
        "## User constraints",
        "Do not touch tests/; keep Python 3.10 support.",
        "## Progress",
        "Reproduced the failure with run_tests(path='tests/test_dates.py').",
        "## Decisions",
        "Parse with datetime.fromisoformat.",
        "## Files",
        "src/dates.py (edited)",
        "## Errors",
        "ValueError: Invalid isoformat string (resolved).",
        "## Open tasks",
        "Run the whole suite.",
        "## Next step",
        "run_tests(path='tests')",
    ]
)

MIDDLE: list[dict[str, Any]] = [
    {"role": "user", "content": "The date parser in src/dates.py fails. Do not touch tests/."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "run_tests", "arguments": '{"path": "tests/test_dates.py"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_7",
        "content": "ValueError: Invalid isoformat string: '2024-13-01'",
    },
    {"role": "assistant", "content": "I will parse with datetime.fromisoformat."},
]


class RecordingFallback:
    """The fallback a user passes: a deterministic digest that records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        return SummaryResult(f"digest of {len(request.messages)} messages")

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        return self.summarize(request)


# ----- one kit per SDK: how to build its client, its recorded replies, how to read its request ---


def _ollama_native(text: str, *, done_reason: str = "stop") -> dict[str, Any]:
    """A native /api/chat reply in the documented shape (synthesised: no native Ollama traffic
    was recorded; https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-no-streaming)."""
    return {
        "model": "qwen3:0.6b",
        "created_at": "2025-06-01T12:00:00.000000Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": done_reason,
        "total_duration": 1_000_000,
        "prompt_eval_count": 412,
        "eval_count": 120,
    }


@dataclass
class Kit:
    name: str
    model: str
    client: Callable[[str, bool], Any]  # (server url, async?) -> SDK client
    ok: Callable[..., Reply]  # (text=..., finish=...) -> a 200 reply
    plain: Callable[[], Reply]  # a real recorded answer without the template
    status: Callable[[int], Reply]  # a synthesised 5xx / 429 in the provider's error shape
    client_error: Callable[[], Reply]  # a recorded 4xx
    read: Callable[[Any], tuple[str, str, int]]  # request body -> (system, user, output cap)
    truncated: str  # the finish reason meaning "cut at the output cap"
    api: str | None = None
    context_window: int | None = None
    path: str = ""


def _openai_error(code: int) -> Reply:
    return Reply(
        status=code,
        body={
            "error": {
                "message": "The server had an error processing your request.",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
    )


def _read_chat(body: Any) -> tuple[str, str, int]:
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    return system["content"], user["content"], body.get("max_tokens") or body["max_completion_tokens"]


def _read_responses(body: Any) -> tuple[str, str, int]:
    assert body["store"] is False
    (user,) = body["input"]
    return body["instructions"], user["content"], body["max_output_tokens"]


def _read_anthropic(body: Any) -> tuple[str, str, int]:
    (user,) = body["messages"]
    return body["system"], user["content"], body["max_tokens"]


def _read_gemini(body: Any) -> tuple[str, str, int]:
    (content,) = body["contents"]
    return (
        body["systemInstruction"]["parts"][0]["text"],
        content["parts"][0]["text"],
        body["generationConfig"]["maxOutputTokens"],
    )


def _read_ollama(body: Any) -> tuple[str, str, int]:
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user" and body["stream"] is False
    return system["content"], user["content"], body["options"]["num_predict"]


def _openai_client(url: str, is_async: bool) -> Any:
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    return cls(base_url=url + "/v1", api_key="test")


def _anthropic_client(url: str, is_async: bool) -> Any:
    cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
    return cls(base_url=url, api_key="test")


def _gemini_client(url: str, is_async: bool) -> Any:
    genai = pytest.importorskip(
        "google.genai", reason="google-genai not installed: Gemini adapter not tested"
    )
    client = genai.Client(api_key="test", http_options={"base_url": url, "api_version": "v1beta"})
    return client.aio if is_async else client


def _ollama_client(url: str, is_async: bool) -> Any:
    ollama = pytest.importorskip("ollama", reason="ollama not installed: Ollama adapter not tested")
    return (ollama.AsyncClient if is_async else ollama.Client)(host=url)


CHAT_OK = "test_max_completion_tokens[gpt-4o-mini].yaml#0"
RESPONSES_OK = "test_openai_responses_system_prompt.yaml#0"
ANTHROPIC_OK = "test_anthropic_model_instructions.yaml#0"
GEMINI_OK = "test_google/test_google_model.yaml#0"
OLLAMA_V1_OK = "test_ollama_local_native_output_uses_json_schema.yaml#0"

KITS = [
    Kit(
        "openai-chat",
        "gpt-4o-mini",
        _openai_client,
        lambda text=TEMPLATE, finish=None: recorded(CHAT_OK, text=text, finish=finish),
        lambda: recorded(CHAT_OK),
        _openai_error,
        lambda: recorded("test_model_name_suggestion[openai-chat].yaml#0"),
        _read_chat,
        "length",
        path="/v1/chat/completions",
    ),
    Kit(
        "openai-responses",
        "gpt-4o",
        _openai_client,
        lambda text=TEMPLATE, finish=None: recorded(RESPONSES_OK, text=text, finish=finish),
        lambda: recorded(RESPONSES_OK),
        _openai_error,
        lambda: recorded("test_openai_responses_model_http_error.yaml#0"),
        _read_responses,
        "max_output_tokens",
        api="responses",
        path="/v1/responses",
    ),
    Kit(
        "anthropic",
        "claude-3-opus-latest",
        _anthropic_client,
        lambda text=TEMPLATE, finish=None: recorded(ANTHROPIC_OK, text=text, finish=finish),
        lambda: recorded(ANTHROPIC_OK),
        # Anthropic's documented error shape; 529 is "overloaded" (https://docs.anthropic.com/en/api/errors)
        lambda code: Reply(
            status=code,
            body={
                "type": "error",
                "error": {
                    "type": "overloaded_error" if code == 529 else "api_error",
                    "message": "Overloaded",
                },
            },
        ),
        lambda: recorded("test_model_name_suggestion[anthropic].yaml#0"),
        _read_anthropic,
        "max_tokens",
        path="/v1/messages",
    ),
    Kit(
        "gemini",
        "gemini-2.5-flash",
        _gemini_client,
        lambda text=TEMPLATE, finish=None: recorded(GEMINI_OK, text=text, finish=finish),
        lambda: recorded(GEMINI_OK),
        # Google's documented error shape (https://ai.google.dev/gemini-api/docs/troubleshooting)
        lambda code: Reply(
            status=code,
            body={
                "error": {
                    "code": code,
                    "message": "The model is overloaded. Please try again later.",
                    "status": "UNAVAILABLE",
                }
            },
        ),
        # the recorded 404 is for another model name: replayed on this kit's path
        lambda: recorded(
            "test_model_name_suggestion[google].yaml#0",
            path="/v1beta/models/gemini-2.5-flash:generateContent",
        ),
        _read_gemini,
        "MAX_TOKENS",
        path="/v1beta/models/gemini-2.5-flash:generateContent",
    ),
    Kit(
        "ollama",
        "qwen3:0.6b",
        _ollama_client,
        lambda text=TEMPLATE, finish=None: Reply(
            body=_ollama_native(text, done_reason=finish or "stop"), path="/api/chat"
        ),
        # a real qwen3 answer (recorded on Ollama's /v1 route) replayed in the native shape
        lambda: Reply(
            body=_ollama_native(exchange(OLLAMA_V1_OK)["response_body"]["choices"][0]["message"]["content"]),
            path="/api/chat",
        ),
        lambda code: Reply(
            status=code, body={"error": "llama runner process has terminated"}, path="/api/chat"
        ),
        lambda: Reply(status=404, body={"error": "model 'qwen3:0.6b' not found"}, path="/api/chat"),
        _read_ollama,
        "length",
        context_window=32_768,
        path="/api/chat",
    ),
    Kit(
        "openai-compatible",  # Ollama's OpenAI-compatible /v1 route, recorded
        "qwen3:0.6b",
        _openai_client,
        lambda text=TEMPLATE, finish=None: recorded(OLLAMA_V1_OK, text=text, finish=finish),
        lambda: recorded(OLLAMA_V1_OK),
        _openai_error,
        lambda: recorded("test_model_name_suggestion[openai-chat].yaml#0"),
        _read_chat,
        "length",
        context_window=32_768,
        path="/v1/chat/completions",
    ),
]


@pytest.fixture(params=KITS, ids=[k.name for k in KITS])
def kit(request: pytest.FixtureRequest) -> Kit:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def run(
    kit: Kit, mode: str, replies: list[Reply], request: SummaryRequest | None = None, **options: Any
) -> tuple[SummaryResult, ReplayServer, RecordingFallback, float]:
    """Summarize ``request`` (default: MIDDLE) through ``kit``'s real SDK client against a server
    serving ``replies``; returns the result, the server, the fallback and the seconds it took."""
    fallback = RecordingFallback()
    options.setdefault("max_retries", 0)
    options.setdefault("backoff", 0.01)
    with ReplayServer(*replies) as server:
        client = kit.client(server.url, mode == "async")
        summarizer = LLMSummarizer(
            client, kit.model, api=kit.api, fallback=fallback, context_window=kit.context_window, **options
        )
        req = request or SummaryRequest(MIDDLE, "openai", model="gpt-4o")
        start = time.monotonic()
        if mode == "sync":
            result = summarizer.summarize(req)
        else:
            result = asyncio.run(summarizer.asummarize(req))
        took = time.monotonic() - start
        # A client that gave up (a timeout) may have sent its request just before: the server's
        # thread reads it on its own time, so wait for that (bounded) before stopping the server.
        server.wait_taken(timeout=5.0)
    assert not server.errors, server.errors
    assert server.pending == 0, "queued replies left unused: the client never sent those requests"
    return result, server, fallback, took


_WARM: set[tuple[str, str]] = set()


@pytest.fixture
def warm(kit: Kit, mode: str) -> None:
    """One successful summary through ``kit``'s SDK in ``mode`` before a test that times a call.

    An SDK's first request in a process pays one-off costs (lazy imports of its resource modules
    and response types, its async transport's setup) that can take longer than a timeout test's
    0.3 s under load: in async mode the deadline then ran out before the request left, so the
    delayed reply was never taken; in sync mode the call overran ``took``'s bound. Those costs are
    paid here, outside the timed call, so the timeout the test sees is the server's delay."""
    if (kit.name, mode) not in _WARM:
        result, _, _, _ = run(kit, mode, [kit.ok()])
        assert unmetered(result) == SummaryResult(TEMPLATE), result
        _WARM.add((kit.name, mode))


def unmetered(result: SummaryResult) -> SummaryResult:
    """``result`` without its usage (the tokens the replies reported), to compare the rest."""
    return dataclasses.replace(result, usage=None)


def assert_fell_back(result: SummaryResult, fallback: RecordingFallback, *needles: str) -> None:
    assert result.fallback_used is True
    assert result.text == "digest of 4 messages"
    assert result.error is not None
    for needle in needles:
        assert needle.lower() in result.error.lower(), result.error


# ----- success through every SDK ----------------------------------------------------------------


def test_summary_through_each_sdk_in_its_own_request_format(kit: Kit, mode: str) -> None:
    result, server, fallback, _ = run(kit, mode, [kit.ok()])
    assert unmetered(result) == SummaryResult(TEMPLATE)
    assert fallback.requests == []
    (sent,) = server.requests
    assert sent.path.split("?")[0] == kit.path
    system, user, cap = kit.read(sent.body)
    assert all(f"## {name}" in system for name in SECTIONS)
    # the middle, rendered as a transcript whatever the summarizer's provider
    for needle in (
        "src/dates.py",
        "run_tests",
        "call_7",
        "tests/test_dates.py",
        "Invalid isoformat string",
        "fromisoformat",
    ):
        assert needle in user
    assert cap == 2_000 + 512  # request.max_tokens + output_headroom
    if kit.name == "ollama":
        assert sent.body["options"]["num_ctx"] == 32_768  # the window the input was fitted to


# ----- every failure falls back, through every SDK ----------------------------------------------


@pytest.mark.usefixtures("warm")
def test_timeout_falls_back(kit: Kit, mode: str) -> None:
    result, server, fallback, took = run(kit, mode, [Reply(delay=1.0)], timeout=0.3)
    assert_fell_back(result, fallback)
    assert "tim" in result.error.lower()  # type: ignore[union-attr]  # "timeout", "timed out"
    assert len(server.requests) == 1  # the request reached the server, whose delay timed out
    assert took < 1.0  # at the timeout, not when the server answered


@pytest.mark.usefixtures("warm")
def test_timeout_is_retried_then_succeeds(kit: Kit, mode: str) -> None:
    # Each attempt may take 1 s; the whole call, retries included, 10 s. (At 0.3 s a loaded
    # machine, two test runs on two cores, timed the retried attempt out too.)
    result, server, _, _ = run(kit, mode, [Reply(delay=3.0), kit.ok()], timeout=10, attempt_timeout=1.0, max_retries=1)
    assert unmetered(result) == SummaryResult(TEMPLATE)
    assert len(server.requests) == 2


def test_retry_after_is_honoured_then_succeeds(kit: Kit, mode: str) -> None:
    busy = kit.status(429)
    busy = Reply(status=429, body=busy.body, headers={"retry-after": "0.4"}, path=busy.path)
    result, server, _, took = run(kit, mode, [busy, kit.ok()], max_retries=2, backoff=0.0)
    assert unmetered(result) == SummaryResult(TEMPLATE)
    assert len(server.requests) == 2
    assert took >= 0.4


def test_retry_after_longer_than_max_backoff_falls_back_at_once(kit: Kit, mode: str) -> None:
    busy = kit.status(503)
    busy = Reply(status=503, body=busy.body, headers={"retry-after": "120"}, path=busy.path)
    result, server, fallback, took = run(kit, mode, [busy], max_retries=3, max_backoff=5.0)
    assert_fell_back(result, fallback, "503", "retry-after 120")
    assert len(server.requests) == 1
    assert took < 5.0


@pytest.mark.parametrize("code", [500, 529])
def test_server_errors_are_retried_then_fall_back(kit: Kit, mode: str, code: int) -> None:
    result, server, fallback, _ = run(kit, mode, [kit.status(code)] * 3, max_retries=2)
    assert_fell_back(result, fallback, str(code), "after 3 attempts")
    assert len(server.requests) == 3


def test_server_error_then_success(kit: Kit, mode: str) -> None:
    result, server, _, _ = run(kit, mode, [kit.status(500), kit.ok()], max_retries=1)
    assert unmetered(result) == SummaryResult(TEMPLATE)
    assert len(server.requests) == 2
    # The error reply carried no completion: one call billed, as the success alone reports.
    alone, _, _, _ = run(kit, mode, [kit.ok()])
    assert result.usage == alone.usage and result.usage is not None and result.usage.calls == 1


def test_the_usage_each_provider_reports_is_carried_to_the_result(kit: Kit, mode: str) -> None:
    # The provider's usage was read from each reply and dropped: a compaction's cost() could only
    # guess the summarizer call (~3.3x low) or leave it out.
    reply = kit.ok()
    result, _, _, _ = run(kit, mode, [reply])
    usage = result.usage
    assert usage is not None and (usage.model, usage.calls, usage.estimated) == (kit.model, 1, False)
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    body = reply.body if isinstance(reply.body, (dict, list)) else json.loads(reply.body)
    numbers = set(re.findall(r'"(?:\w*token\w*|\w*_count)": (\d+)', json.dumps(body)))
    assert {str(usage.input_tokens), str(usage.output_tokens)} <= numbers, (numbers, usage)
    # A reply the output checks refuse was billed too: the fallback's result says so.
    refused, _, fallback, _ = run(kit, mode, [kit.plain()])
    assert refused.fallback_used and fallback.requests
    assert refused.usage is not None and refused.usage.calls == 1 and refused.usage.input_tokens > 0


def test_client_error_is_not_retried(kit: Kit, mode: str) -> None:
    reply = kit.client_error()
    result, server, fallback, _ = run(kit, mode, [reply], max_retries=3)
    assert_fell_back(result, fallback, str(reply.status))
    assert len(server.requests) == 1


def test_dropped_connection_is_retried_then_falls_back(kit: Kit, mode: str) -> None:
    result, server, fallback, _ = run(kit, mode, [Reply(close=True), Reply(close=True)], max_retries=1)
    assert_fell_back(result, fallback, "after 2 attempts")
    assert len(server.requests) == 2


def test_malformed_json_body_falls_back(kit: Kit, mode: str) -> None:
    broken = Reply(
        status=200, body='{"id": "chatcmpl-1", "choices": [{"message": {"content": "## Go', path=kit.path
    )
    result, server, fallback, _ = run(kit, mode, [broken])
    assert_fell_back(result, fallback)
    assert len(server.requests) == 1


def test_empty_output_falls_back(kit: Kit, mode: str) -> None:
    result, _, fallback, _ = run(kit, mode, [kit.ok(text="")])
    assert_fell_back(result, fallback, "empty output")


def test_output_without_the_template_falls_back(kit: Kit, mode: str) -> None:
    result, _, fallback, _ = run(kit, mode, [kit.plain()])
    assert_fell_back(result, fallback, "lacks the template's sections", "Goal", "Next step")


def test_output_cut_at_the_cap_falls_back(kit: Kit, mode: str) -> None:
    result, _, fallback, _ = run(kit, mode, [kit.ok(finish=kit.truncated)])
    assert_fell_back(result, fallback, "output cap")


# What each provider says when a filter or a refusal stopped the reply (Ollama has no such reason).
STOPPED = {"openai-chat": "content_filter", "openai-responses": "content_filter", "anthropic": "refusal",
           "gemini": "SAFETY", "openai-compatible": "content_filter"}


@pytest.mark.parametrize("kit", [k for k in KITS if k.name in STOPPED], ids=lambda k: k.name)
def test_a_reply_stopped_by_a_filter_falls_back(kit: Kit, mode: str) -> None:
    # The partial text carries every heading: it was taken as a summary ending mid-word.
    partial = TEMPLATE.rsplit("\n", 1)[0] + "\nrun_tests(pa"
    result, _, fallback, _ = run(kit, mode, [kit.ok(text=partial, finish=STOPPED[kit.name])])
    assert_fell_back(result, fallback, "stopped by the provider", STOPPED[kit.name])


def test_a_compatible_server_that_gives_no_finish_reason_is_taken_at_its_word(mode: str) -> None:
    kit = next(k for k in KITS if k.name == "openai-compatible")
    reply = kit.ok()
    del reply.body["choices"][0]["finish_reason"]
    result, _, _, _ = run(kit, mode, [reply])
    assert unmetered(result) == SummaryResult(TEMPLATE)


@pytest.mark.parametrize(
    "reply",
    [
        f"<think>\nThe user wants a summary. SECRET_THOUGHT\n</think>\n\n{TEMPLATE}",
        f"~~~markdown\n{TEMPLATE}\n~~~",
        f"Sure, I have updated the summary.\nHere it is:\n\n{TEMPLATE}",
    ],
    ids=["thoughts", "tilde-fence", "two-line-preamble"],
)
def test_a_summary_is_taken_without_the_thoughts_and_chat_around_it(reply: str) -> None:
    kit = KITS[0]
    result, _, _, _ = run(kit, "sync", [kit.ok(text=reply)])
    assert unmetered(result) == SummaryResult(TEMPLATE)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("<think>\nLet me think about the transcript. " + "and so on " * 30, "empty output"),
        ("\n".join(f"## {name}\n..." for name in SECTIONS), "says nothing"),
        ("\n".join(f"**{name}:** x" for name in SECTIONS), "says nothing"),
        ("\n".join(f"## {name}\n{hint}" for name, hint in _SECTION_HINTS.items()), "repeats the prompt"),
    ],
    ids=["thoughts-only", "placeholders", "one-letter-lines", "the-prompt-echoed"],
)
def test_a_reply_with_headings_but_no_summary_falls_back(reply: str, why: str) -> None:
    kit = KITS[0]
    result, _, fallback, _ = run(kit, "sync", [kit.ok(text=reply)])
    assert_fell_back(result, fallback, why)


def test_a_streamed_request_option_is_refused_when_built() -> None:
    # Every call would have fallen back silently: the SDK returns an event stream.
    with pytest.raises(ValueError, match="stream"):
        LLMSummarizer(openai.OpenAI(api_key="test"), "gpt-4o-mini", request_options={"stream": True})


def test_recorded_gemini_empty_reply_falls_back(mode: str) -> None:
    kit = next(k for k in KITS if k.name == "gemini")
    reply = recorded("max_tokens_thinking_model_empty_response.yaml#0", path=kit.path)
    result, _, fallback, _ = run(kit, mode, [reply])
    assert_fell_back(result, fallback, "empty output")


def test_recorded_openrouter_429_through_an_openai_compatible_base_url() -> None:
    # recorded without retry-after: retried with backoff, then the recorded 429 again, then fallback
    fallback = RecordingFallback()
    limited = recorded("test_openrouter_errors_raised.yaml#0")
    with ReplayServer(limited, limited) as server:
        client = openai.OpenAI(base_url=server.url + "/api/v1", api_key="test")
        summarizer = LLMSummarizer(
            client, "google/gemini-2.0-flash-exp:free", fallback=fallback, max_retries=1, backoff=0.01
        )
        result = summarizer.summarize(SummaryRequest(MIDDLE, "openai"))
    assert not server.errors
    assert_fell_back(result, fallback, "429", "Provider returned error", "after 2 attempts")
    assert len(server.requests) == 2
    assert server.requests[0].body["model"] == "google/gemini-2.0-flash-exp:free"
    assert "max_tokens" in server.requests[0].body  # an OpenAI-compatible server reads max_tokens


# ----- the logic ---------------------------------------------------------------------------------


def test_previous_summary_and_focus_reach_the_prompt() -> None:
    kit = KITS[0]
    request = SummaryRequest(
        MIDDLE, "openai", previous_summary="## Goal\nOld goal: ship v2", instructions="keep every ticket id"
    )
    result, server, _, _ = run(kit, "sync", [kit.ok()], request, instructions="answer in English")
    assert unmetered(result) == SummaryResult(TEMPLATE)
    system, user, _ = kit.read(server.requests[0].body)
    assert "keep every ticket id" in system and "answer in English" in system
    assert "<previous_summary>\n## Goal\nOld goal: ship v2\n</previous_summary>" in user
    assert user.index("previous_summary") < user.index("<transcript>")


def test_caller_history_is_not_mutated() -> None:
    kit = KITS[0]
    middle = copy.deepcopy(MIDDLE)
    middle[2]["content"] = "x" * 50_000  # long enough to be capped in the transcript
    before = copy.deepcopy(middle)
    result, server, _, _ = run(kit, "sync", [kit.ok()], SummaryRequest(middle, "openai"))
    assert result.fallback_used is False
    assert middle == before
    _, user, _ = kit.read(server.requests[0].body)
    assert "…[cut " in user and len(user) < 20_000


def _long_middle(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append({"role": "user", "content": f"step {i}: look at file src/mod_{i}.py " + "detail " * 300})
        out.append({"role": "assistant", "content": f"done with src/mod_{i}.py " + "note " * 300})
    return out


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_middle_larger_than_the_window_is_mapped_then_reduced(mode: str) -> None:
    kit = KITS[0]
    middle = _long_middle(12)  # ~15k tokens
    request = SummaryRequest(middle, "openai", previous_summary="## Goal\nprevious goal", max_tokens=500)
    window = 8_000
    # map calls (one per chunk), then one reduce call; every reply is a valid template
    replies = [
        kit.ok(text=TEMPLATE.replace("Fix the failing", f"Part {i}: fix the failing")) for i in range(8)
    ]
    fallback = RecordingFallback()
    with ReplayServer(*replies) as server:
        client = kit.client(server.url, mode == "async")
        summarizer = LLMSummarizer(client, kit.model, context_window=window, fallback=fallback, max_retries=0)
        req_result = (
            summarizer.summarize(request) if mode == "sync" else asyncio.run(summarizer.asummarize(request))
        )
    assert not server.errors
    assert req_result.fallback_used is False, req_result.error
    calls = [kit.read(r.body) for r in server.requests]
    maps, reduce = calls[:-1], calls[-1]
    assert len(maps) >= 2
    for system, user, cap in calls:
        tokens = contextfold.estimate(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], model=kit.model
        )
        assert tokens + cap <= window  # every call fits the summarizer's window
    # every message of the middle went to exactly one map call, each chunk a contiguous run (async
    # map calls run concurrently, so they reach the server in any order: sort chunks by content)
    chunks = sorted([i for i in range(len(middle)) if f"[{i}] " in user] for _, user, _ in maps)
    assert all(c == list(range(c[0], c[0] + len(c))) for c in chunks)
    assert [i for c in chunks for i in c] == list(range(len(middle)))
    # the reduce call merges the previous summary (first) with every part's summary
    _, merge, cap = reduce
    assert merge.index("<previous_summary>\n## Goal\nprevious goal") < merge.index("<part_summary>")
    assert merge.count("<part_summary>") == len(maps)
    assert cap == 500 + 512
    # map parts get at most the summary budget (less when many parts share the reduce input)
    assert all(c <= 500 + 512 for _, _, c in maps)


def test_map_failure_falls_back_for_the_whole_middle() -> None:
    kit = KITS[0]
    request = SummaryRequest(_long_middle(12), "openai", max_tokens=500)
    fallback = RecordingFallback()
    with ReplayServer(kit.ok(), kit.status(500), kit.ok(), kit.ok(), kit.ok(), kit.ok()) as server:
        client = kit.client(server.url, True)
        summarizer = LLMSummarizer(client, kit.model, context_window=8_000, fallback=fallback, max_retries=0)
        result = asyncio.run(summarizer.asummarize(request))
    assert result.fallback_used is True and "500" in (result.error or "")
    assert fallback.requests == [request]  # the fallback summarizes the same, whole middle


def test_window_too_small_for_the_summary_falls_back() -> None:
    fallback = RecordingFallback()
    summarizer = LLMSummarizer(
        openai.OpenAI(api_key="test", base_url="http://127.0.0.1:9/v1"),
        "gpt-4o-mini",
        context_window=2_000,
        fallback=fallback,
    )
    result = summarizer.summarize(SummaryRequest(MIDDLE, "openai", max_tokens=1_500))
    assert_fell_back(result, fallback, "window too small")


def test_empty_middle_returns_the_previous_summary_without_a_call() -> None:
    summarizer = LLMSummarizer(
        openai.OpenAI(api_key="test", base_url="http://127.0.0.1:9/v1"),
        "gpt-4o-mini",
        fallback=RecordingFallback(),
    )
    assert summarizer.summarize(SummaryRequest([], "openai", previous_summary="kept")) == SummaryResult(
        "kept"
    )


def test_sync_summarize_with_an_async_client_is_a_type_error() -> None:
    summarizer = LLMSummarizer(
        openai.AsyncOpenAI(api_key="test"), "gpt-4o-mini", fallback=RecordingFallback()
    )
    with pytest.raises(TypeError, match="asummarize"):
        summarizer.summarize(SummaryRequest(MIDDLE, "openai"))


def test_default_fallback_is_the_extractive_summarizer() -> None:
    with ReplayServer(KITS[0].client_error()) as server:
        summarizer = LLMSummarizer(openai.OpenAI(base_url=server.url + "/v1", api_key="test"), "gpt-4o-mini")
        result = summarizer.summarize(SummaryRequest(MIDDLE, "openai"))
    assert result.fallback_used is True and "404" in (result.error or "")
    expected = contextfold.ExtractiveSummarizer().summarize(SummaryRequest(MIDDLE, "openai"))
    assert result.text == expected.text != TEMPLATE


def test_unknown_summarizer_model_needs_a_context_window() -> None:
    with pytest.raises(contextfold.UnknownModelError, match="context_window="):
        LLMSummarizer(openai.OpenAI(api_key="test"), "my-local-model")


def test_provider_name_builds_the_sdk_default_client(monkeypatch: pytest.MonkeyPatch) -> None:
    kit = KITS[0]
    with ReplayServer(kit.ok()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        result = LLMSummarizer("openai", "gpt-4o-mini", fallback=RecordingFallback()).summarize(
            SummaryRequest(MIDDLE, "openai")
        )
    assert unmetered(result) == SummaryResult(TEMPLATE)


@pytest.mark.parametrize(
    ("provider", "module", "extra"),
    [
        ("ollama", "ollama", "ollama"),
        ("gemini", "google.genai", "gemini"),
        ("anthropic", "anthropic", "anthropic"),
    ],
)
def test_missing_sdk_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(__import__("sys").modules, module, None)  # the SDK is not installed
    with pytest.raises(ImportError, match=rf"pip install '\.\[{extra}\]' in a checkout"):
        LLMSummarizer(provider, "gpt-4o-mini")


def test_unsupported_client_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unsupported client"):
        LLMSummarizer(object(), "gpt-4o-mini")


def test_sdks_are_not_imported_with_the_package() -> None:
    import subprocess
    import sys

    code = (
        "import sys, contextfold; from contextfold import LLMSummarizer; "
        "print(sorted(m for m in ('openai', 'anthropic', 'google.genai', 'ollama') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("option", "value"),
    [("timeout", 0), ("max_retries", -1), ("max_concurrency", 0), ("context_window", 0), ("backoff", -1.0)],
)
def test_bad_options_are_value_errors(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        LLMSummarizer(openai.OpenAI(api_key="test"), "gpt-4o-mini", **{option: value})


def test_api_applies_to_openai_clients_only() -> None:
    with pytest.raises(ValueError, match="only applies to OpenAI"):
        LLMSummarizer(anthropic.Anthropic(api_key="test"), "claude-haiku-4-5", api="responses")


def test_real_swe_trajectories_are_mapped_and_reduced_within_a_small_window() -> None:
    from transcripts import LOCAL, load_conversations

    kit = KITS[0]
    window = 8_000
    trajectories = load_conversations(LOCAL, "mini-swe-agent-gemini3")
    assert trajectories
    for trajectory in trajectories:
        middle = trajectory["messages"][2:-4]  # head (system, task) and tail stay out of the fold
        request = SummaryRequest(middle, "openai", model="gpt-4o", max_tokens=600)
        with ReplayServer(*[kit.ok()] * 40) as server:
            summarizer = LLMSummarizer(
                kit.client(server.url, False), kit.model, context_window=window, fallback=RecordingFallback()
            )
            result = summarizer.summarize(request)
        assert not server.errors
        assert unmetered(result) == SummaryResult(TEMPLATE), result.error
        calls = [kit.read(r.body) for r in server.requests]
        maps = calls[:-1]
        assert len(maps) >= 2, trajectory["source"]
        for system, user, cap in calls:
            prompt = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            assert contextfold.estimate(prompt, model=kit.model) + cap <= window
        seen = [i for _, user, _ in maps for i in range(len(middle)) if f"\n[{i}] " in user]
        assert seen == list(range(len(middle))), trajectory["source"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_compaction_carries_its_summarizer_calls_usage_and_cost_prices_it(mode: str) -> None:
    # cost() priced the summarizer call 0 by default and, with llm_summary=True, guessed it from
    # the folded tokens at the conversation model's prices (~3.3x low on SWE compactions).
    kit = next(k for k in KITS if k.name == "openai-chat")
    msgs = [{"role": "user", "content": "Fix the date parser."}]
    for k in range(30):
        msgs += [{"role": "assistant", "content": f"Reading src/dates{k}.py " + "notes " * 80},
                 {"role": "user", "content": "go on " + "y " * 40}]
    with ReplayServer(*[kit.ok() for _ in range(8)]) as server:
        summarizer = LLMSummarizer(kit.client(server.url, mode == "async"), kit.model, max_retries=0)
        c = contextfold.Compactor(budget=3_000, strategy="summarize", summarizer=summarizer, min_free_share=0.0)
        r = c.compact(msgs) if mode == "sync" else asyncio.run(c.compact_async(msgs))
        calls = len(server.requests)
    usage = r.summarizer_usage
    assert usage is not None and usage.calls == calls >= 1 and usage.model == kit.model
    one, _, _, _ = run(kit, mode, [kit.ok()])
    assert (usage.input_tokens, usage.output_tokens) == (one.usage.input_tokens * calls, one.usage.output_tokens * calls)
    p = prices_for(kit.model)
    cost = r.cost(model="gpt-4o")
    assert cost.summarizer_call == pytest.approx((usage.input_tokens * p.input + usage.output_tokens * p.output) / 1e6)
    assert r.cost(model="gpt-4o", llm_summary=False).summarizer_call == 0.0
    with pytest.raises(KeyError, match="summarizer_prices="):
        dataclasses.replace(r, summarizer_usage=dataclasses.replace(usage, model="qwen3:0.6b")).cost(model="gpt-4o")
    # The extractive digest calls no model: no usage, no call priced.
    plain = contextfold.Compactor(budget=3_000, strategy="summarize", min_free_share=0.0).compact(msgs)
    assert plain.summarizer_usage is None and plain.cost(model="gpt-4o").summarizer_call == 0.0
